# Helpers shared by the perfgate action's steps (sourced, not run).
# shellcheck shell=bash
#
# Inputs arrive as INPUT_* variables that action.yml sets explicitly (composite actions do not
# export them). Outputs go to $GITHUB_OUTPUT. perfgate itself is $PERFGATE_BIN (the install
# step's output) and its Python is $PERFGATE_PY.

PERFGATE_BIN="${PERFGATE_BIN:-perfgate}"
PERFGATE_PY="${PERFGATE_PY:-python3}"

# Where results, traces and the comparison go; the artifact step uploads this folder.
pg_out_dir() {
  printf '%s\n' "${INPUT_OUT_DIR:-${RUNNER_TEMP:-/tmp}/perfgate}"
}

pg_output() {  # name value: one step output
  # A line break would start a second `name=value` line: a forged output for later steps.
  if [[ "$2" == *[$'\n\r']* ]]; then
    pg_error "output $1: refusing a value with a line break: $(pg_shown "$2")"
    exit 2
  fi
  printf '%s=%s\n' "$1" "$2" >> "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}

# Workflow commands end at a line break, so their text is escaped the way the runner decodes it
# (% CR LF); anything from an artifact or an answer stays inside the one message.
pg_command_text() {
  local text="$*"
  text="${text//'%'/%25}"
  text="${text//$'\r'/%0D}"
  text="${text//$'\n'/%0A}"
  printf '%s' "$text"
}
pg_notice() { printf '::notice title=perfgate::%s\n' "$(pg_command_text "$*")"; }
pg_warning() { printf '::warning title=perfgate::%s\n' "$(pg_command_text "$*")"; }
pg_error() { printf '::error title=perfgate::%s\n' "$(pg_command_text "$*")"; }

# A rejected value as a message shows it: quoted, control characters spelled out, at most 80
# characters.
pg_shown() {
  local quoted
  quoted="$(printf '%q' "$1")"
  if [ "${#quoted}" -gt 80 ]; then quoted="${quoted:0:77}..."; fi
  printf '%s' "$quoted"
}

# Values read from an artifact or an input are checked before anything uses them (exit 2, bad
# input, as docs/architecture.md §7's exit codes have it).
pg_require_commit() {  # what value: a commit id, 7 to 64 hex digits (SHA-1 or SHA-256)
  if [[ "$2" =~ ^[0-9a-fA-F]{7,64}$ ]]; then return 0; fi
  pg_error "$1: $(pg_shown "$2") is not a commit id (7 to 64 hex digits)"
  exit 2
}
pg_require_pr() {  # what value: a pull request number
  if [[ "$2" =~ ^[1-9][0-9]{0,9}$ ]]; then return 0; fi
  pg_error "$1: $(pg_shown "$2") is not a pull request number"
  exit 2
}
pg_require_name() {  # what value: a branch or commit name: one line, not an option
  if [ -n "$2" ] && [[ "$2" != -* ]] && [[ "$2" != *[[:cntrl:]]* ]]; then return 0; fi
  pg_error "$1: $(pg_shown "$2") is not a branch or commit name"
  exit 2
}

pg_true() {  # "true"/"1"/"yes" (any case) -> success
  case "$(printf '%s' "${1:-}" | tr '[:upper:]' '[:lower:]')" in
    true | 1 | yes | on) return 0 ;;
    *) return 1 ;;
  esac
}

# Where the embedded SQLite store lives when neither `db` nor `server` is given: outside the
# workspace, which actions/checkout cleans on every run, so that a persistent (self-hosted)
# runner keeps the history from job to job. Data, not a cache (cache cleaners would drop the
# history), one store per repository.
pg_embedded_store() {
  local repo="${GITHUB_REPOSITORY:-default}"
  printf '%s/perfgate/%s/perfgate.db\n' "${XDG_DATA_HOME:-$HOME/.local/share}" "${repo//[^A-Za-z0-9_.\/-]/_}"
}

# Store settings reach perfgate as its own environment variables, never on the command line
# (a database URL may hold a password; argv is visible to every process on the runner).
pg_store_env() {
  if [ -n "${INPUT_DB:-}" ]; then
    export PERFGATE_DB="$INPUT_DB"
  elif [ -z "${INPUT_SERVER:-}" ]; then
    local file
    file="$(pg_embedded_store)"
    mkdir -p "$(dirname "$file")"
    export PERFGATE_DB="sqlite:///$file"
    if [ "${RUNNER_ENVIRONMENT:-}" = github-hosted ]; then
      pg_warning "no db or server: the embedded store ($file) is lost when this GitHub-hosted job ends, so no history builds up; set db (a database URL from a secret) or server"
    else
      echo "store: the embedded SQLite store $file (kept on this runner only; set db or server to share it)"
    fi
  fi
  if [ -n "${INPUT_SERVER:-}" ]; then export PERFGATE_SERVER="$INPUT_SERVER"; fi
  if [ -n "${INPUT_SERVER_TOKEN:-}" ]; then export PERFGATE_TOKEN="$INPUT_SERVER_TOKEN"; fi
}

# One field of the event payload, read as data (never evaluated): pg_event KEY [KEY...]
pg_event() {
  [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ] || return 0
  "$PERFGATE_PY" -m perfgate ci event "$@"
}

# The merge-base of commit $1 with origin/$2 (PR number $3, may be empty), fetching what a
# shallow checkout lacks; fails when there is none: pg_merge_base HEAD_SHA BASE_BRANCH [PR]
pg_merge_base() {
  "$PERFGATE_PY" -m perfgate ci merge-base "$@"
}
