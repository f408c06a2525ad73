# bench/lib.sh — helpers shared by bench/run and bench/drivers; sourced,
# with REPO, PG_CONFIG, section, die and is_root defined by the caller.

# Numbers. Durations are kept in integer microseconds.

now_us() { echo "${EPOCHREALTIME/./}"; }

# microseconds -> seconds with 2 decimals
secs() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1e6 }'; }

# a / b with 2 decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# kB -> MiB with 1 decimal
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# 1234567 -> 1,234,567
commas() { sed -E ':a; s/^([0-9]+)([0-9]{3})/\1,\2/; ta' <<<"$1"; }

# Median of integers (the mean of the middle two for an even count).
median() {
    local sorted n
    mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
    n=${#sorted[@]}
    if ((n % 2)); then
        echo "${sorted[n / 2]}"
    else
        echo $(( (sorted[n / 2 - 1] + sorted[n / 2]) / 2 ))
    fi
}

# Largest of integers.
maximum() { printf '%s\n' "$@" | sort -n | tail -n 1; }

# ---------------------------------------------------------------------------
# Install the packages, build and install the extension.
build_and_install() {
    section "packages"
    bash "$REPO/.ci/packages"

    section "build"
    make -C "$REPO" PG_CONFIG="$PG_CONFIG"
    if is_root || { [[ -w $("$PG_CONFIG" --pkglibdir) ]] \
                    && [[ -w $("$PG_CONFIG" --sharedir)/extension ]]; }; then
        make -C "$REPO" install PG_CONFIG="$PG_CONFIG"
    elif command -v sudo >/dev/null 2>&1; then
        sudo make -C "$REPO" install PG_CONFIG="$PG_CONFIG"
    else
        die "cannot write to the PostgreSQL installation and sudo is not available"
    fi
}

# ---------------------------------------------------------------------------
# Peak private memory of the treble_sync worker, and of its reader.
#
# The worker is a child of the destination's postmaster whose process title
# is "postgres: treble_sync cycle of table id N <name>"; a first load's
# reader (treble_sync.read_ahead) is another, "postgres: treble_sync reader
# of table id N <name>". Matching on the parent keeps workers of other
# clusters on the machine out. RssAnon in /proc/PID/status is a process's
# private (anonymous) resident memory: shared buffers are shared memory and
# not counted. What is reported is the peak of the two together, the
# private memory the cycle holds.

# Sample every 50 ms until the file $1 exists, then print the peak in kB.
# The caller sets DEST_POSTMASTER to the destination postmaster's pid.
rss_sampler() {
    local stop=$1 peak=0 pids=() pid key value kb total n=0
    while [[ ! -e $stop ]]; do
        # look for the processes anew every 10 samples (a reader starts
        # after its worker), or when one is gone
        if ((n % 10 == 0 || ${#pids[@]} == 0)); then
            mapfile -t pids < <(pgrep -P "$DEST_POSTMASTER" -f 'treble_sync (cycle|reader) of' || true)
        fi
        n=$((n + 1))
        total=0
        for pid in "${pids[@]}"; do
            kb=0
            # Plain bash, no process per sample; a process may exit between
            # the test and the read.
            { while read -r key value _; do
                  if [[ $key == RssAnon: ]]; then kb=$value; break; fi
              done <"/proc/$pid/status"; } 2>/dev/null || n=0
            total=$((total + kb))
        done
        if ((total > peak)); then peak=$total; fi
        sleep 0.05
    done
    echo "$peak"
}

