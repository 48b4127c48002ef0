#!/usr/bin/env bash
# Record the text of real Slurm commands into tests/slurm/recorded/ for the parser tests.
# Needs a running cluster (.ci/slurm-up.sh) with no other jobs; takes about 15 s. Every job
# still in slurmctld's memory shows up in the squeue/scontrol listings (the jobs file names ours). Rerun it on
# another Slurm version to add that version's outputs (file names start with the version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/recorded
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ver=$(sinfo -V | awk '{print $2}')
mkdir -p "$out"
save() { local name=$1; shift; { "$@" 2>&1 || true; } > "$out/${ver}_$name.txt"; }
state() { squeue -h -t all -j "$1" -o %T; }
wait_state() {  # job, state
    for _ in $(seq 100); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.1; done
    echo "job $1 never reached $2 (now $(state "$1"))" >&2; return 1
}

printf '#!/bin/bash\nsleep 300\n' > "$work/sleep.sh"
printf '#!/bin/bash\necho failing\nexit 3\n' > "$work/fail.sh"
printf '#!/bin/bash\nsrun true\n' > "$work/ok.sh"
cd "$work"
opts=(-o /dev/null -c 1)

failed=$(sbatch --parsable "${opts[@]}" -J rec_failed fail.sh)
save sbatch_plain sbatch "${opts[@]}" -J rec_completed ok.sh
ok=$(awk '{print $4}' "$out/${ver}_sbatch_plain.txt")
wait_state "$failed" FAILED
wait_state "$ok" COMPLETED
cancelled=$(sbatch --parsable "${opts[@]}" -J rec_cancelled sleep.sh)
wait_state "$cancelled" RUNNING
scancel "$cancelled"
wait_state "$cancelled" CANCELLED
requeued=$(sbatch --parsable "${opts[@]}" --requeue -J rec_requeued sleep.sh)
wait_state "$requeued" RUNNING
scontrol requeue "$requeued"
save sbatch_parsable sbatch --parsable "${opts[@]}" -J rec_running sleep.sh
running=$(cat "$out/${ver}_sbatch_parsable.txt")
wait_state "$running" RUNNING
pending=$(sbatch --parsable -o /dev/null -c "$(nproc)" -J rec_pending_resources sleep.sh)
held=$(sbatch --parsable "${opts[@]}" --hold -J rec_held sleep.sh)
later=$(sbatch --parsable "${opts[@]}" --begin=now+3600 -J rec_begin sleep.sh)
save sbatch_unsatisfiable sbatch --parsable "${opts[@]}" --nodes=5 -J rec_unsatisfiable sleep.sh
unsatisfiable=$(cat "$out/${ver}_sbatch_unsatisfiable.txt")
save sbatch_rejected sbatch --parsable "${opts[@]}" --gres=gpu:8 -J rec_rejected sleep.sh
for _ in $(seq 100); do
    [ "$(squeue -h -j "$pending" -o %r)" = Resources ] && break
    sleep 0.2
done
ids="$failed,$ok,$cancelled,$requeued,$running,$pending,$held,$later,$unsatisfiable"
save squeue_text squeue -h -t all -j "$ids" -o '%i|%T|%N|%r|%j'
save squeue_json squeue --json -t all
save scontrol_show_job scontrol show job
save scontrol_show_job_oneliner scontrol -o show job
save scontrol_show_job_failed scontrol show job "$failed"
save scontrol_show_job_invalid scontrol show job 999999
save squeue_invalid squeue -h -j 999999 -o '%i|%T|%N|%r|%j'
# With accounting off this prints "Slurm accounting storage is disabled" (kept as ..._sacct_disabled.txt).
save sacct sacct -P -n -o JobID,State,ExitCode,NodeList,Reason -j "$ids"
save sacct_duplicates sacct -P -n -D -o JobID,State,ExitCode,NodeList,Reason -j "$ids"
save scontrol_show_hostnames scontrol show hostnames "$(sinfo -h -o %N)"
scancel "$running" "$pending" "$held" "$later" "$requeued" "$unsatisfiable"
printf '%s\n' "failed=$failed" "completed=$ok" "cancelled=$cancelled" "requeued=$requeued" "running=$running" \
    "pending=$pending" "held=$held" "begin=$later" "unsatisfiable=$unsatisfiable" > "$out/${ver}_jobs.txt"
echo "recorded $(ls "$out"/"${ver}"_* | wc -l) files for Slurm $ver in $out"
