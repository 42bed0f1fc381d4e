# Sourced by the scripts that make venvs: `need_python NAME MAJOR MINOR`
# sets $python (PYTHON, else python3) if it is that version or newer with
# venv and pip, else says what to install and exits 1 (NAME: the script,
# for the message).
need_python() {
    python=${PYTHON:-python3}
    if ! "$python" -c "import sys, venv, ensurepip; assert sys.version_info >= ($2, $3)" 2>/dev/null; then
        echo "$1: need Python $2.$3 or newer with venv and pip as '$python':" >&2
        echo "  apt-get install python3 python3-venv   (or set PYTHON=/path/to/python3)" >&2
        exit 1
    fi
}
