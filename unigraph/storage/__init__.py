"""Where tables live: local and gs:// files, and BigQuery's clients, queries and read sessions."""
import warnings

# Google's client libraries warn on import, on stderr, that they will stop supporting
# an older Python (3.10 today) in future releases. It says nothing about this run, and
# the commands promise one line per problem on stderr, so it is not shown.
warnings.filterwarnings("ignore", category=FutureWarning,
                        module=r"google\.api_core\._python_version_support")
