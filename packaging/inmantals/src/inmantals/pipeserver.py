"""`python -m inmantals.pipeserver`: what vscode-inmanta and the Zed extension start."""

from inmantals import run_language_server

if __name__ == "__main__":
    run_language_server()
