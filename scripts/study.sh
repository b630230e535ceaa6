#!/usr/bin/env bash
# A long study started detached, from a clone pinned at the study's commit, so that it outlives
# the shell, the sitting and any change to the work tree. See docs/running.md, "Studies that
# outlive a sitting".
#
#   scripts/study.sh setup COMMIT [--force]    clone this repository at COMMIT into $STUDY_DIR, make install
#   scripts/study.sh start LAUNCH [ARGS...]    launch it detached from $STUDY_DIR (resumes what is unfinished);
#                                              with --dry-run, print its plan here and launch nothing
#   scripts/study.sh resume LAUNCH             start its last launch again: same clone, options and external sources
#   ... start|resume LAUNCH --after OTHER ...  the same, once OTHER's launch (running or itself queued) has ended;
#       [--start-by TIME]                       a queue lapses if OTHER ends after TIME (e.g. a run that cannot
#                                              resume, started only with enough of the sitting left)
#   scripts/study.sh status [--all] [ARGS...]  python -m benchmarks.status on the study's results root: the runs
#                                              of unfinished launches (--all: of every launch)
#   scripts/study.sh stop [LAUNCH]             cancel queues, then SIGTERM the launch(es): runs checkpoint and stop
#
# A launch is named by its experiment, or EXPERIMENT@LABEL where two launches of one experiment
# (other methods or datasets) run side by side: `start table1@bc --methods bc`. One live launch
# per name.
#
# STUDY_DIR    the pinned clone (default $HOME/odt-study), with its own .venv
# ODT_RESULTS  the results root, outside any work tree (default $HOME/odt-runs); launches keep
#              their pid file and log under <results>/_logs/
# STUDY_SOURCE the repository setup clones (default: the one holding this script)
# STUDY_RECORDS the committed records (default: that repository's results/): start first imports
#              the experiment's complete runs from there, so a new results root (a new machine)
#              does not run them again
set -euo pipefail

SCRIPT_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STUDY_DIR="${STUDY_DIR:-$HOME/odt-study}"
RESULTS="${ODT_RESULTS:-$HOME/odt-runs}"
SOURCE="${STUDY_SOURCE:-$SCRIPT_REPO}"
RECORDS="${STUDY_RECORDS:-$SCRIPT_REPO/results}"  # the committed records a launch brings into $RESULTS first
START_CHECK_S="${STUDY_START_CHECK_S:-3}"  # seconds after which a launch that died at once is reported
STOP_WAIT_S="${STUDY_STOP_WAIT_S:-300}"    # seconds stop waits for a launch to checkpoint its runs and exit
QUEUE_POLL_S="${STUDY_QUEUE_POLL_S:-30}"   # seconds between a queued launch's looks at the one it waits on
# where methods that run code from outside this repository find it (docs/official-odt.md, docs/corl.md):
# a launch records those that are set, and resume sets them again
EXTERNAL_SOURCES=(ODT_OFFICIAL_SRC ODT_CORL_SRC)

usage() {
    local code="${1:-2}"
    [[ $code == 0 ]] || exec >&2
    cat <<'EOF'
usage: scripts/study.sh setup COMMIT [--force]  clone this repository at COMMIT into $STUDY_DIR, make install
       scripts/study.sh start LAUNCH [ARGS...]  launch it detached from $STUDY_DIR (resumes what is unfinished;
                                                --dry-run prints the plan in the foreground, launches nothing)
       scripts/study.sh resume LAUNCH           start its last launch again (its clone, options, ODT_*_SRC)
       start|resume LAUNCH --after OTHER ...    queue it: a detached waiter starts it once OTHER has ended
           [--start-by TIME]                    ... if that is before TIME (date -d syntax, e.g. 09:55); else it lapses
       scripts/study.sh status [--all] [ARGS...] python -m benchmarks.status on the study's results root: runs of
                                                unfinished launches; --all: of every launch, complete ones too
       scripts/study.sh stop [LAUNCH]           SIGTERM the launch(es): runs checkpoint and stop at a safe point
LAUNCH: an experiment, or EXPERIMENT@LABEL for a second launch of it beside the first
(e.g. table1@bc --methods bc); one live launch per name.
STUDY_DIR (default $HOME/odt-study), ODT_RESULTS (default $HOME/odt-runs); see docs/running.md
EOF
    exit "$code"
}

die() { echo "study.sh: $*" >&2; exit 1; }

pid_file() { echo "$RESULTS/_logs/study-$1.pid"; }
args_file() { echo "$RESULTS/_logs/study-$1.args"; }  # the last launch's options, one per line
from_file() { echo "$RESULTS/_logs/study-$1.from"; }  # its clone, then NAME=VALUE of its external sources
recorded() { [[ -f "$(from_file "$1")" && -f "$(args_file "$1")" ]]; }  # 0 when resume can restart it
queue_file() { echo "$RESULTS/_logs/study-$1.queued"; }  # a queued launch: its waiter's pid, then what it waits on

# 0 when the pid file names a live `python -m benchmarks.run` process (not a reused pid)
alive() {
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(head -n 1 "$1")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    ps -p "$pid" -o args= 2>/dev/null | grep -q "benchmarks\.run"
}

# 0 when the launch is queued: its queue file names a live waiter (this script, not a reused pid)
queued() {
    local file pid
    file="$(queue_file "$1")"
    [[ -f "$file" ]] || return 1
    pid="$(head -n 1 "$file")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    ps -p "$pid" -o args= 2>/dev/null | grep -q "study\.sh"
}

pending() { alive "$(pid_file "$1")" || queued "$1"; }  # running, or queued to run

# the launches ever started under $RESULTS: a pid file while running, a queue file while queued,
# a log from every start (so a stopped study still shows in status)
study_launches() {
    local f
    for f in "$RESULTS"/_logs/study-*.pid "$RESULTS"/_logs/study-*.queued "$RESULTS"/_logs/study-*.log; do
        [[ -e "$f" ]] || continue
        f="${f##*/study-}"
        case "$f" in
            *.pid) echo "${f%.pid}" ;;
            *.queued) echo "${f%.queued}" ;;
            *) [[ "$f" =~ ^(.+)-[0-9]{8}T[0-9]{6}Z\.log$ ]] && echo "${BASH_REMATCH[1]}" ;;
        esac
    done | sort -u
}

cmd_setup() {
    local commit="" force=0 arg sha current
    for arg in "$@"; do
        case "$arg" in
            --force) force=1 ;;
            -*) die "setup: unknown option $arg" ;;
            *) [[ -z "$commit" ]] || usage; commit="$arg" ;;
        esac
    done
    [[ -n "$commit" ]] || usage
    sha="$(git -C "$SOURCE" rev-parse --verify --quiet "$commit^{commit}")" \
        || die "setup: $commit is not a commit of $SOURCE"
    if [[ -e "$STUDY_DIR" ]]; then
        current="$(git -C "$STUDY_DIR" rev-parse --verify --quiet HEAD 2>/dev/null)" \
            || die "setup: $STUDY_DIR exists and is not a clone; move it away or set STUDY_DIR"
        if [[ "$current" != "$sha" ]]; then
            [[ $force == 1 ]] || die "setup: $STUDY_DIR is at ${current:0:12}, not ${sha:0:12}: a study in flight runs
  from its own commit (runs resumed under other code are not the same computation). Pass --force
  to move it, between studies only, or set STUDY_DIR to another folder"
            for arg in $(study_launches); do
                if alive "$(pid_file "$arg")"; then die "setup: a launch of $arg is running from $STUDY_DIR; stop it first"; fi
            done
            git -C "$STUDY_DIR" fetch --quiet "$SOURCE" "$sha" 2>/dev/null || git -C "$STUDY_DIR" fetch --quiet "$SOURCE"
            git -C "$STUDY_DIR" checkout --quiet --detach "$sha"
        elif [[ -x "$STUDY_DIR/.venv/bin/python" ]]; then
            echo "$STUDY_DIR is set up at ${sha:0:12} (venv $STUDY_DIR/.venv)"
            return 0
        fi
    else
        git clone --quiet --no-checkout "$SOURCE" "$STUDY_DIR"
        git -C "$STUDY_DIR" checkout --quiet --detach "$sha"
    fi
    (cd "$STUDY_DIR" && make install)
    echo "$STUDY_DIR is set up at ${sha:0:12} (venv $STUDY_DIR/.venv)"
}

valid_launch() {
    [[ "$1" =~ ^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$ ]] \
        || die "$2: $1 is not an experiment name, nor EXPERIMENT@LABEL (letters, digits, _ . -)"
}

cmd_start() {
    [[ $# -ge 1 && "$1" != -* ]] || usage
    local launch="$1" experiment pidfile log pid other after="" start_by="" options=()
    shift
    valid_launch "$launch" start
    while [[ $# -gt 0 ]]; do  # --after, --start-by are study.sh's own; every other option goes to benchmarks.run
        if [[ "$1" == --after ]]; then
            [[ $# -ge 2 ]] || die "start: --after needs the launch to wait for"
            after="$2"; shift 2
        elif [[ "$1" == --start-by ]]; then
            [[ $# -ge 2 ]] || die "start: --start-by needs a time (e.g. 09:55)"
            start_by="$(deadline "$2")"; shift 2
        else
            options+=("$1"); shift
        fi
    done
    set -- "${options[@]+"${options[@]}"}"
    if [[ -n "$after" ]]; then
        valid_launch "$after" "start --after"
        [[ "$after" != "$launch" ]] || die "start: $launch cannot wait for itself"
        if pending "$after"; then queue "$launch" "$after" "${start_by:--}" "$@"; return; fi
        echo "$after is neither running nor queued: starting $launch now"
    elif [[ -n "$start_by" ]]; then
        die "start: --start-by only bounds a queue; give --after OTHER with it"
    fi
    experiment="${launch%%@*}"
    [[ -x "$STUDY_DIR/.venv/bin/python" ]] \
        || die "start: no study clone at $STUDY_DIR (its .venv/bin/python); run scripts/study.sh setup COMMIT first"
    import_committed "$experiment" "$@"
    if [[ " $* " == *" --dry-run "* ]]; then  # the plan only: in the foreground, no pid file, no log
        cd "$STUDY_DIR" && ODT_RESULTS="$RESULTS" exec .venv/bin/python -m benchmarks.run "$experiment" \
            --executor local --threads 1 --parallel 2 --results "$RESULTS" "$@"
    fi
    mkdir -p "$RESULTS/_logs"
    pidfile="$(pid_file "$launch")"
    if alive "$pidfile"; then
        die "start: a launch of $launch is already running (pid $(head -n 1 "$pidfile"), log $(sed -n 2p "$pidfile")); scripts/study.sh status shows its runs"
    fi
    if queued "$launch" && [[ "$(head -n 1 "$(queue_file "$launch")")" != "$$" ]]; then
        die "start: $launch is queued after $(sed -n 2p "$(queue_file "$launch")") (waiter pid $(head -n 1 "$(queue_file "$launch")")); scripts/study.sh stop $launch cancels it"
    fi
    for other in $(study_launches); do
        if [[ "$other" != "$launch" ]] && alive "$(pid_file "$other")"; then
            echo "warning: a launch of $other is running too; the two share this machine's cores" >&2
        fi
    done
    log="$RESULTS/_logs/study-$launch-$(date -u +%Y%m%dT%H%M%SZ).log"
    # setsid + nohup: its own session, deaf to the shell's hangup; SIGTERM (stop) still reaches it
    (cd "$STUDY_DIR" && ODT_RESULTS="$RESULTS" exec setsid nohup .venv/bin/python -m benchmarks.run "$experiment" \
        --executor local --threads 1 --parallel 2 --yes --results "$RESULTS" "$@" >"$log" 2>&1 </dev/null) &
    pid=$!
    printf '%s\n%s\n%s\n' "$pid" "$log" "$(git -C "$STUDY_DIR" rev-parse HEAD 2>/dev/null || echo unknown)" >"$pidfile"
    record_launch "$launch" "$@"
    sleep "$START_CHECK_S"
    if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$pidfile"
        tail -n 20 "$log" >&2 || true
        die "start: the launch of $launch ended at once (log $log)"
    fi
    echo "started $launch: pid $pid, from $STUDY_DIR, results $RESULTS"
    echo "log: $log"
    echo "see: scripts/study.sh status    stop: scripts/study.sh stop $launch"
}

# the experiment's complete runs committed under $RECORDS and missing from $RESULTS, copied there
# (benchmarks.import_runs: never over a run already there); with --dry-run, only said
import_committed() {
    local experiment="$1" python="$SCRIPT_REPO/.venv/bin/python" dry=() summary
    shift
    [[ -d "$RECORDS" && -x "$python" ]] || return 0
    [[ " $* " == *" --dry-run "* ]] && dry=(--dry-run)
    summary="$(cd "$SCRIPT_REPO" && "$python" -m benchmarks.import_runs "$RECORDS" --results "$RESULTS" \
        --experiment "$experiment" "${dry[@]+"${dry[@]}"}" 2>/dev/null | tail -n 1)" || true
    if [[ "$summary" =~ ^(imported|would\ import)\ ([0-9]+)\;.*conflicts\ kept\ ([0-9]+) ]] \
        && [[ "${BASH_REMATCH[2]}" != 0 || "${BASH_REMATCH[3]}" != 0 ]]; then
        echo "committed records of $experiment from $RECORDS: $summary"
    fi
}

# what status plans a launch as (its options, one per line) and what resume restarts it from
# (its clone, then the external sources set)
record_launch() {
    local launch="$1" name
    shift
    if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; fi >"$(args_file "$launch")"
    {
        (cd "$STUDY_DIR" && pwd)
        for name in "${EXTERNAL_SOURCES[@]}"; do
            if [[ -n "${!name:-}" ]]; then echo "$name=${!name}"; fi
        done
    } >"$(from_file "$launch")"
}

# TIME (anything date -d reads) as seconds since the epoch; refused unless it is still ahead
deadline() {
    local when
    when="$(date -d "$1" +%s 2>/dev/null)" || die "start: --start-by $1 is not a time date -d can read (e.g. 09:55)"
    [[ "$when" -gt "$(date +%s)" ]] || die "start: --start-by $1 ($(date -u -d "@$when" +%FT%TZ)) has already passed"
    echo "$when"
}

# a detached waiter (its own session, as a launch) that starts LAUNCH once AFTER is neither running
# nor queued, unless START_BY (seconds since the epoch, or -) has passed by then; the launch is
# recorded at once, so status plans it and resume knows it
queue() {
    local launch="$1" after="$2" start_by="$3" pid
    shift 3
    [[ -x "$STUDY_DIR/.venv/bin/python" ]] \
        || die "start: no study clone at $STUDY_DIR (its .venv/bin/python); run scripts/study.sh setup COMMIT first"
    pending "$launch" && die "start: $launch is already running or queued; scripts/study.sh status shows it"
    mkdir -p "$RESULTS/_logs"
    record_launch "$launch" "$@"
    STUDY_DIR="$STUDY_DIR" ODT_RESULTS="$RESULTS" setsid nohup bash "${BASH_SOURCE[0]}" _after "$after" "$launch" "$start_by" "$@" \
        >>"$RESULTS/_logs/study-$launch.queued.log" 2>&1 </dev/null &
    pid=$!
    printf '%s\n%s\n' "$pid" "$after" >"$(queue_file "$launch")"
    echo "queued $launch after $after: waiter pid $pid (it looks every ${QUEUE_POLL_S} s), from $STUDY_DIR"
    if [[ "$start_by" != - ]]; then echo "it lapses if $after has not ended by $(date -u -d "@$start_by" +%FT%TZ)"; fi
    echo "see: scripts/study.sh status    cancel: scripts/study.sh stop $launch"
}

# the waiter's body: wait, then start in this process (so the queue file's pid stays live until
# the launch's own pid file is written)
cmd_after() {
    local after="$1" launch="$2" start_by="$3"
    shift 3
    while pending "$after"; do sleep "$QUEUE_POLL_S"; done
    if [[ "$start_by" != - && "$(date +%s)" -gt "$start_by" ]]; then
        echo "$(date -u +%FT%TZ) $after has ended after $(date -u -d "@$start_by" +%FT%TZ): $launch lapses, not started"
        rm -f "$(queue_file "$launch")"
        return 0
    fi
    echo "$(date -u +%FT%TZ) $after has ended: starting $launch"
    cmd_start "$launch" "$@"
    rm -f "$(queue_file "$launch")"
}

cmd_resume() {
    [[ ( $# -eq 1 || ( $# -eq 3 && "$2" == --after ) || ( $# -eq 5 && "$2" == --after && "$4" == --start-by ) ) \
        && "$1" != -* ]] || usage
    local launch="$1" from options=() after=("${@:2}")
    from="$(from_file "$launch")"
    recorded "$launch" \
        || die "resume: no recorded launch of $launch under $RESULTS/_logs; start it once: scripts/study.sh start $launch [OPTIONS]"
    STUDY_DIR="$(head -n 1 "$from")"
    export_sources "$from" resume
    mapfile -t options <"$(args_file "$launch")"
    cmd_start "$launch" "${options[@]+"${options[@]}"}" "${after[@]+"${after[@]}"}"
}

# the log of LAUNCH's newest start, if any (study-LAUNCH-<UTC stamp>.log; stamps sort by time)
newest_log() {
    local f newest=""
    for f in "$RESULTS/_logs/study-$1-"*.log; do
        [[ -e "$f" && "${f##*/}" =~ ^study-.+-[0-9]{8}T[0-9]{6}Z\.log$ && "${f%-*}" == "$RESULTS/_logs/study-$1" ]] || continue
        [[ "$f" > "$newest" ]] && newest="$f"
    done
    echo "$newest"
}

# 0 when LAUNCH's newest start ended with every run of its plan complete: benchmarks.run's last
# line says so (none failed, none left to another launch)
ended_complete() {
    local log
    log="$(newest_log "$1")"
    [[ -n "$log" ]] && tail -n 5 "$log" | grep -Eq "^${1%%@*}: [0-9]+ finished, 0 failed, [0-9]+ were already complete$"
}

# export the external sources a launch recorded (its .from file after the clone's line); with
# "status", only those not set already, and a malformed line is skipped rather than refused
export_sources() {
    local from="$1" why="$2" line
    while IFS= read -r line; do
        if [[ "$line" =~ ^([A-Z_]+)=(.*)$ && " ${EXTERNAL_SOURCES[*]} " == *" ${BASH_REMATCH[1]} "* ]]; then
            [[ "$why" == status && -n "${!BASH_REMATCH[1]:-}" ]] || export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
        elif [[ "$why" != status ]]; then
            die "$why: $from: line '$line' is not NAME=VALUE of ${EXTERNAL_SOURCES[*]}"
        fi
    done < <(tail -n +2 "$from")
}

# how a launch that is not running is restarted: its recorded launch, else a plain start; nothing
# when its last start completed its plan
resume_hint() {
    local options
    if ended_complete "$1"; then
        echo "its plan is complete ($(newest_log "$1")); nothing to resume"
    elif recorded "$1"; then
        options="$(tr '\n' ' ' <"$(args_file "$1")" | sed 's/ *$//')"
        echo "scripts/study.sh resume $1 restarts it: from $(head -n 1 "$(from_file "$1")"), options: ${options:-none}"
    else
        echo "scripts/study.sh start $1 resumes it"
    fi
}

cmd_status() {
    local python="$SCRIPT_REPO/.venv/bin/python" where="$SCRIPT_REPO" launch pidfile launches_seen=() done=() all=0
    local arg rest=()  # --all anywhere among the arguments; the rest go to benchmarks.status
    for arg in "$@"; do
        if [[ "$arg" == --all ]]; then all=1; else rest+=("$arg"); fi
    done
    set -- "${rest[@]+"${rest[@]}"}"
    if [[ -f "$STUDY_DIR/benchmarks/status.py" && -x "$STUDY_DIR/.venv/bin/python" ]]; then
        python="$STUDY_DIR/.venv/bin/python" where="$STUDY_DIR"  # the study's own code reads its plan
    fi
    [[ -x "$python" ]] || python="python3"
    for launch in $(study_launches); do
        pidfile="$(pid_file "$launch")"
        if alive "$pidfile"; then
            echo "launch $launch: running, pid $(head -n 1 "$pidfile"), log $(sed -n 2p "$pidfile")"
        elif queued "$launch"; then
            echo "launch $launch: queued after $(sed -n 2p "$(queue_file "$launch")") (waiter pid $(head -n 1 "$(queue_file "$launch")"))"
        elif [[ $all == 0 ]] && ended_complete "$launch"; then
            done+=("$launch")  # one line for all of them, below
            continue
        else
            echo "launch $launch: not running ($(resume_hint "$launch"))"
        fi
        launches_seen+=("$launch")
    done
    local summary=()
    if [[ ${#done[@]} -gt 0 ]]; then
        echo "launches whose plan is complete, nothing to resume (logs in $RESULTS/_logs): ${done[*]}"
        if [[ ${#launches_seen[@]} == 0 ]]; then  # nothing else: their line per experiment, not their runs
            launches_seen=("${done[@]}") summary=(--summary)
        else
            echo "(their runs are not listed: scripts/study.sh status --all lists every launch's)"
        fi
    fi
    # status builds each listed run's config, and official-odt's and corl-iql's need their sources
    for launch in "${launches_seen[@]+"${launches_seen[@]}"}"; do
        if [[ -f "$(from_file "$launch")" ]]; then export_sources "$(from_file "$launch")" status; fi
    done
    if ! grep -q "EXPERIMENT@LABEL" "$where/benchmarks/status.py" 2>/dev/null; then  # an older clone: experiments only
        mapfile -t launches_seen < <(for launch in "${launches_seen[@]+"${launches_seen[@]}"}"; do echo "${launch%%@*}"; done | sort -u)
    fi
    local plan_as_launched=()  # a clone older than status --launches plans every experiment in full
    grep -q -- "--launches" "$where/benchmarks/status.py" 2>/dev/null && plan_as_launched=(--launches "$RESULTS/_logs")
    cd "$where" && "$python" -m benchmarks.status --results "$RESULTS" "${plan_as_launched[@]+"${plan_as_launched[@]}"}" \
        "${launches_seen[@]+"${launches_seen[@]}"}" "${summary[@]+"${summary[@]}"}" "$@"
}

cmd_stop() {
    [[ $# -le 1 ]] || usage
    local launches launch pidfile pid waited
    launches="${1:-$(study_launches)}"
    [[ -n "$launches" ]] || { echo "no study launch recorded under $RESULTS/_logs"; return 0; }
    for launch in $launches; do  # queues first: stopping what they wait on must not start them
        if queued "$launch"; then
            kill -TERM "$(head -n 1 "$(queue_file "$launch")")"
            echo "$launch: queue cancelled (it was waiting for $(sed -n 2p "$(queue_file "$launch")"))"
            rm -f "$(queue_file "$launch")"
        fi
    done
    for launch in $launches; do
        pidfile="$(pid_file "$launch")"
        if ! alive "$pidfile"; then
            echo "$launch: not running"
            rm -f "$pidfile"
            continue
        fi
        pid="$(head -n 1 "$pidfile")"
        kill -TERM "$pid"
        echo "$launch: SIGTERM sent to pid $pid; its runs checkpoint at their next safe point and stop"
        waited=0
        while kill -0 "$pid" 2>/dev/null && [[ $waited -lt $STOP_WAIT_S ]]; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "$launch: still exiting after ${STOP_WAIT_S} s (pid $pid); scripts/study.sh status shows it" >&2
            return 1
        fi
        rm -f "$pidfile"
        echo "$launch: stopped; $(resume_hint "$launch")"
    done
}

[[ $# -ge 1 ]] || usage
command="$1"
shift
# One compound command ending in exit: bash reads a script as it runs it, and a waiter lives for
# hours, so it must never read this file again after starting (an edit of it would be read mid-line).
{
    case "$command" in
        setup) cmd_setup "$@" ;;
        start) cmd_start "$@" ;;
        resume) cmd_resume "$@" ;;
        _after) cmd_after "$@" ;;  # the queued launch's waiter (see queue)
        status) cmd_status "$@" ;;
        stop) cmd_stop "$@" ;;
        -h|--help|help) usage 0 ;;
        *) echo "study.sh: unknown command $command" >&2; usage ;;
    esac
    exit
}
