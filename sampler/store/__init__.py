"""Graph stores: a graph's indexes prepared once as flat files, mapped by every run
(docs/store.md). layout: which arrays, pure; build: writes a store from tables;
mapped: opens one for a job."""
