"""Where tables live: local and gs:// files, and BigQuery's clients, queries and read sessions."""
