/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every CM_* setting, declared once. Each row:
 *
 *   _(field, NAME, TYPE, "default", values or NULL, category, "doc")
 *
 * NAME is the variable without its CM_ prefix; TYPE is one of SIZE, TIME,
 * BANDWIDTH, BOOL, ENUM, ADDR, STRING, UINT, OUTPUT (parsers in cm_config.c).
 * The table generates the cm_config_t struct, the parser loop, the
 * unknown-name check and the `cm_info -c` dump. values: ENUM "a|b|c" in the
 * same order as the C enums in cm_config.h; UINT an optional range "min..max"
 * (what the code behind it can take); SIZE an optional least value "min..";
 * OUTPUT the keywords accepted besides a file path.
 */
#ifndef CM_CONFIG_TABLE_H
#define CM_CONFIG_TABLE_H

#include "util/cm_variant_table.h"

#ifndef CM_APPS_DIR_DEFAULT
#define CM_APPS_DIR_DEFAULT "/usr/local/libexec/cashmere/apps"
#endif

#define CM_CONFIG_TABLE(_) \
    _(log_level, LOG_LEVEL, ENUM, "warn", "error|warn|info|debug", "runtime", \
      "Least severe message printed by the runtime.") \
    _(shared_base, SHARED_BASE, ADDR, "0x200000000000", NULL, "runtime", \
      "Virtual address of the shared region, identical in every process. Must be page aligned and free.") \
    _(shared_size, SHARED_SIZE, SIZE, "64g", "64k..", "runtime", \
      "Size of the shared region (the most the shared heap can hold). Address space: reserved whole " \
      "in every process, with its metadata; memory is committed only for the pages a process " \
      "touches (`cm_info --memory` says what a size costs). Registered with the network once; " \
      "on InfiniBand without on-demand paging the whole range is pinned.") \
    _(page_size, PAGE_SIZE, SIZE, "0", NULL, "runtime", \
      "The coherence unit, the page of every protocol: 0 = the operating system's page (4 KiB " \
      "on x86-64); else a power of two from that up to 64k (the unit the seeds' studies vary: " \
      "faults, fetches, twins and diffs then cover it whole).") \
    _(meta_size, META_SIZE, SIZE, "0", NULL, "runtime", \
      "Size of each process's metadata segment (directory entries, write-notice ring, lock and " \
      "barrier words), mapped just below the shared region. 0: exactly what the shared size, " \
      "process count, CM_LOCKS and CM_WN_RING need; a value below that is an error.") \
    _(local_heap, LOCAL_HEAP, SIZE, "0", NULL, "runtime", \
      "Top part of the shared region set aside for non-collective allocations (cm_malloc_local: " \
      "Tmk_malloc, PARMACS G_MALLOC after CREATE), split equally among the processes; the rest is " \
      "the collective heap (cm_malloc). 0: a quarter of CM_SHARED_SIZE.") \
    _(protocol, PROTOCOL, ENUM, "cashmere", "cashmere|treadmarks|none|twolevel", "protocol", \
      "Coherence protocol: cashmere (directory, write notices, write-through to homes over " \
      "one-sided RDMA), treadmarks (lazy release consistency, twins and diffs, messages), none " \
      "(one process, the shared region plain memory: the sequential baseline of speedups), or " \
      "twolevel (Cashmere-2L: the processes of a host share one copy of each page; between " \
      "hosts a directory bit per host, notices per host, twins and two-way diffs; up to 16 " \
      "hosts).") \
    _(variant, VARIANT, ENUM, "CHSM", CM_VARIANT_VALUES, \
      "protocol", \
      "Cashmere variant, the paper's four letters: C copy page on fault / N line transfers; read " \
      "misses by H hardware / S software; writes forwarded to the home by H hardware / S software; " \
      "M merge buffer / N none. `cm_info --variants` says which this machine can run.") \
    _(directory, DIRECTORY, ENUM, "auto", "auto|mcs|cas|add", "protocol", \
      "Directory entry update: mcs (the paper's per-entry MCS lock, entry fetch pipelined behind " \
      "the lock's fetch-and-store; up to 64 processes), cas (one 64-bit compare-and-swap word; " \
      "up to 16 processes) or add (that word changed by fetching adds that never hold it, each " \
      "writer notifying the sharers it finds, notices in per-sender bins; up to 16 processes; " \
      "no prefetch yet). auto: add where it fits, else mcs.") \
    _(unsafe_threshold, UNSAFE_THRESHOLD, UINT, "8", "0..4294967295", "protocol", \
      "A page whose transition to weak needs more than this many write notices to other processes " \
      "becomes unsafe: from then on sharers check its directory entry at acquire instead of " \
      "receiving notices.") \
    _(merge_lines, MERGE_LINES, UINT, "16", "0..65536", "protocol", \
      "Entries (64-byte lines with per-byte dirty masks) of the software merge buffer of the *SM " \
      "variants; a line is written through to its home when evicted and at every release.") \
    _(forward, FORWARD, ENUM, "auto", "auto|store|batch|release", "protocol", \
      "CHS* and NSS* (stores forwarded in software): store = the paper's doubling, each store (or " \
      "merge-buffer line) goes to its home as it happens, one put each; batch (CHS* only) = the " \
      "same runs, gathered into one message per home of CM_FORWARD_BATCH bytes, applied by the " \
      "home's CPU, acknowledged at the release; release = stored lines are twinned and what " \
      "changed goes to the home at the release, one put per run of changed bytes. auto: batch " \
      "for homes reached over TCP (which emulates every put in the home's CPU anyway) under CHS*, " \
      "else store.") \
    _(prefetch, PREFETCH, UINT, "0", "0..64", "protocol", \
      "Prefetch on a miss, as ArgoDSM does with 8: a page fault also brings the other pages of " \
      "its aligned block of this many pages that the process does not hold, all in one round " \
      "trip; each is left without access until its first use (a local fault). Cashmere: C*** " \
      "with the compare-and-swap directory joins and copies them (a page whose join would post " \
      "notices, claim its home or find it unsafe is left to its own fault); TreadMarks asks for " \
      "the diffs of the block's invalidated pages with the faulting page's. 0 or 1: off (the " \
      "papers).") \
    _(refetch, REFETCH, ENUM, "auto", "auto|paper|used", "protocol", \
      "What an acquire does with a page it invalidates. paper = as the papers: Cashmere's page " \
      "leaves the sharing set and joins again, copied, at its next fault (two directory updates " \
      "and a get, one round trip after another); TreadMarks fetches its diffs at its next access. " \
      "used = a page used since its last copy (or validation) is brought up to date at the " \
      "acquire, every such page in one batch: Cashmere (C*** with the add or compare-and-swap " \
      "directory) keeps it in the sharing set and copies it again, TreadMarks asks for its " \
      "diffs; the page stays without access until its next use (a local fault). auto: where " \
      "some peer is reached over a network (not mapped here), used while it pays, as this " \
      "process's own accesses show (pages brought up to date and used, against those never " \
      "used and those invalidated and needed right after), and for Cashmere with the " \
      "compare-and-swap directory only (the add form's fault already joins and copies in one " \
      "round trip); else paper.") \
    _(forward_batch, FORWARD_BATCH, SIZE, "16k", NULL, "protocol", \
      "CM_FORWARD=batch: the bytes of a write-through message to one home (256 to 1M).") \
    _(line_size, LINE_SIZE, SIZE, "64", NULL, "protocol", \
      "NS* (software line fills): the bytes a load or store miss fetches from the page's home in " \
      "one get; a power of two from 8 to the page size.") \
    _(line_page_fill, LINE_PAGE_FILL, UINT, "2", "0..65536", "protocol", \
      "NS*: on a page none of whose lines was valid, the miss that makes this many brings the " \
      "page's other missing lines with it, in one get (a page swept line by line costs one " \
      "transfer, not one per line); 0: lines only, as the paper's NS systems.") \
    _(offload_pause, OFFLOAD_PAUSE, TIME, "20us", NULL, "protocol", \
      "CHH* and NSH* (writes forwarded by the offload thread): the pause between the thread's " \
      "passes over the pages written here. Shorter: stores reach homes sooner, at more CPU time " \
      "(the stats report it as offload_cpu_ns).") \
    _(wn_ring, WN_RING, UINT, "8192", "1..1073741824", "protocol", \
      "Slots of each process's write-notice ring (CM_DIRECTORY=add: shared out among the bins of " \
      "its senders, a power of two each). When it overflows no notice is lost: the owner " \
      "invalidates every cached page at its next acquire (counted in the stats).") \
    _(locks, LOCKS, UINT, "131072", "1..16777216", "protocol", \
      "Number of lock ids cm_lock_acquire accepts (each costs 16 bytes per process).") \
    _(first_touch, FIRST_TOUCH, BOOL, "yes", NULL, "protocol", \
      "After the initialization phase (the first barrier, or cm_init_done) a page's home moves to " \
      "the first process that touches it; no: homes stay round-robin.") \
    _(check_stores, CHECK_STORES, BOOL, "no", NULL, "protocol", \
      "Cashmere: stop the job, naming the address and the instruction, when a store into the shared " \
      "region was not seen by the store hooks (code not built with cmcc, a raw system call), which " \
      "would never reach the page's home. Pages are mapped read-only until a hooked store and pages " \
      "homed elsewhere are compared with a twin at every release: slow, for finding such stores. " \
      "TreadMarks sees every store by page protection and ignores it.") \
    _(tmk_gc_bytes, TMK_GC_BYTES, SIZE, "64m", NULL, "protocol", \
      "TreadMarks: when the write notices and diffs a process holds exceed this, the next barrier " \
      "collects garbage (every copy is brought up to date, then all history is dropped).") \
    _(tmk_write_detect, TMK_WRITE_DETECT, ENUM, "fault", "fault|scan", "protocol", \
      "TreadMarks: how the pages written in an interval are found. fault (the thesis): every " \
      "written page is write-protected at the end of each interval, so its next write faults. " \
      "scan: a page written in one interval stays writable and is compared at the end of the next " \
      "with a copy taken at its start; only pages found unchanged are protected again.") \
    _(stats, STATS, OUTPUT, "", "table", "protocol", \
      "Statistics at cm_finalize: empty = none; \"table\" = rank 0 prints every process's and the " \
      "total counts and times on stderr (rows zero in every process left out); a path (with a / " \
      "or a ., e.g. ./stats.json) = every row as JSON written to that file (and no table), whose " \
      "directory must be writable when the job starts; `cm_stats FILE` prints it as CSV.") \
    _(trace, TRACE, OUTPUT, "", "off", "protocol", \
      "The protocol event trace: empty or off = none; a path prefix (with a / or a ., e.g. " \
      "./run) = each process writes PREFIX.RANK.cmtrace: its page faults, fetches, locks, " \
      "barriers, acquires and releases, diffs and requests, and the phases of the statistics' " \
      "timers, with times on one clock (offsets to rank 0's measured at start and end). " \
      "`cm_trace PREFIX` turns them into Chrome/Perfetto trace-event JSON or CSV.") \
    _(trace_buffer, TRACE_BUFFER, UINT, "262144", "1..1073741824", "protocol", \
      "Events each thread keeps in memory under CM_TRACE (40 bytes each: 10 MiB by default) " \
      "before it writes them to its process's file.") \
    _(progress_thread, PROGRESS_THREAD, ENUM, "auto", "auto|on|off", "runtime", \
      "Thread that serves peers' one-sided operations while this process computes or blocks. Needed " \
      "where the transport emulates RMA in software (TCP). auto: start it when some peer's memory is " \
      "not directly mapped (no shared-memory path), or when UCX emulates atomics with messages the " \
      "target's CPU executes (no atomic lane: UCX_ATOMIC_MODE=device over shared memory, soft-RoCE).") \
    _(peer_timeout, PEER_TIMEOUT, TIME, "5s", NULL, "runtime", \
      "A peer heard from by no heartbeat for this long is lost: the process that notices says " \
      "which rank on which host in one line and the job ends (the launcher ends the rest). Each " \
      "process sends a UDP datagram to every peer every tenth of this (at most 0.5 s) from a " \
      "thread of its own, so computing never delays it. Shorter: a lost host ends the job sooner; " \
      "a process stopped longer (a debugger, SIGSTOP) is taken for lost. 0: no heartbeats; a " \
      "lost host then leaves its peers waiting.") \
    _(stuck_report, STUCK_REPORT, TIME, "60s", NULL, "runtime", \
      "A wait inside the library (a lock grant or hand-off, a barrier, a page, diff or directory " \
      "reply, a notice, a fence of the job) that has lasted this long prints one line from the " \
      "waiting rank: what it waits for, from which rank, since when, and the last message and " \
      "heartbeat it had from that rank; again at twice the time, four times, ...; the job goes " \
      "on. 0: no such lines. cmrun --timeout (CM_TIMEOUT) asks every rank for the same line when " \
      "it ends a job.") \
    _(progress_handoff, PROGRESS_HANDOFF, TIME, "1ms", NULL, "runtime", \
      "While the application thread waits inside the library it serves peers itself and the " \
      "progress thread sleeps; once the application leaves, the thread takes over within this time. " \
      "Shorter: quicker service of peers that arrive just then; longer: fewer wake-ups.") \
    _(wait, WAIT, ENUM, "auto", "auto|spin|block", "runtime", \
      "How a process waits for a lock, a barrier or a reply. spin: progress and spin, yielding the " \
      "core. block: after CM_WAIT_SPIN, sleep until a peer's write or a message wakes it (needs the " \
      "progress thread, and peers that can wake it: node-local ones or TCP). auto: block when this " \
      "node runs more of the job's processes than this process has cores.") \
    _(wait_spin, WAIT_SPIN, TIME, "50us", NULL, "runtime", \
      "Where waits block: how long a wait spins and yields before it sleeps.") \
    _(stdin_all, STDIN_ALL, BOOL, "no", NULL, "runtime", \
      "Give every rank the same stdin: before main, rank 0 reads its stdin to the end and every " \
      "process then reads those bytes from the first one. Set by `cmrun --stdin FILE`.") \
    _(aslr, ASLR, BOOL, "no", NULL, "runtime", \
      "Address-space layout randomization of the job's processes. no: each process started by a " \
      "launcher re-executes itself once, before main, with randomization off, so code, globals, " \
      "libraries and the heap built before PARMACS CREATE have the same addresses in every process " \
      "(pointers that process 0 stores in shared memory are valid everywhere); yes: keep it.") \
    _(net_latency, NET_LATENCY, TIME, "0", NULL, "network", \
      "Injected delay: a round trip. Added to every remote one-sided operation (put, get, atomic) " \
      "before it counts as complete, half of it to every message before its handler runs at the " \
      "target (a request and its reply take one latency, as a get). Real waiting. 0 = off.") \
    _(net_bandwidth, NET_BANDWIDTH, BANDWIDTH, "0", NULL, "network", \
      "Injected delay: caps the issuing process's transfer rate (the seed's I/O bus bandwidth), " \
      "charged per byte of every operation and message, which queue behind each other (e.g. 400MB = " \
      "400e6 bytes/s, 10Gb = 10e9 bits/s, 256MiB). 0 = unlimited.") \
    _(net_overhead, NET_OVERHEAD, TIME, "0", NULL, "network", \
      "Injected delay: CPU time the issuing process spends (busy) on every remote operation and " \
      "every message it sends (host overhead). 0 = off.") \
    _(net_occupancy, NET_OCCUPANCY, TIME, "0", NULL, "network", \
      "Injected delay: the network interface's time per packet (NI occupancy): every operation " \
      "and message is at least one packet of CM_NET_PACKET bytes; the packets of one process queue " \
      "behind each other, with the bytes of CM_NET_BANDWIDTH. 0 = off.") \
    _(net_packet, NET_PACKET, SIZE, "4k", "64..", "network", \
      "Packet size of CM_NET_OCCUPANCY: an operation of n bytes is ceil(n / CM_NET_PACKET) packets.") \
    _(net_interrupt, NET_INTERRUPT, TIME, "0", NULL, "network", \
      "Injected delay: the interrupt cost, from a request's arrival to the start of its handler, " \
      "spent busy by the target's CPU: every request message (TreadMarks's page, diff and lock " \
      "requests; two levels' lock asks and diff batches; Cashmere's forwarded write batches), and " \
      "every one-sided operation a CPU at the target executes (UCX over TCP; charged to the " \
      "issuer's wait, as the target's progress runs inside UCX). 0 where nothing at the target runs " \
      "(shared memory, RDMA). 0 = off.") \
    _(launcher, LAUNCHER, ENUM, "auto", "auto|srun|prterun|mpirun", "cmrun", \
      "Process manager cmrun uses. auto: srun inside a Slurm allocation, else prterun, else mpirun.") \
    _(launcher_args, LAUNCHER_ARGS, STRING, "", NULL, "cmrun", \
      "Extra arguments cmrun passes to the launcher, split into words as a shell would (quotes group, " \
      "a backslash escapes; nothing is expanded or run), e.g. \"--mca plm_rsh_args '-p 2222'\".") \
    _(apps_dir, APPS_DIR, STRING, CM_APPS_DIR_DEFAULT, NULL, "cmrun", \
      "Where cmrun looks for a program given by bare name before searching PATH.") \
    _(checked, CHECKED, BOOL, "no", NULL, "cmrun", \
      "Set by cmrun once it has checked the job on this machine before launching (cm_info --check): " \
      "the ranks then neither repeat its warnings nor check the memory and files again.") \
    _(run_dir, RUN_DIR, STRING, "", NULL, "cmrun", \
      "Set by cmrun: a directory where each rank on this machine records its pid, and later whether " \
      "it finished, reported an error or was killed by a fatal signal (with its last words), so " \
      "that cmrun can say how a rank died and end the job itself when the launcher does not.") \
    _(timeout, TIMEOUT, TIME, "0", NULL, "cmrun", \
      "cmrun's time limit for the job (cmrun --timeout): past it every rank prints what it waits " \
      "for (or that it is not waiting in the library), then cmrun ends the job on every host and " \
      "exits with status 124. 0: none. Read by cmrun; the ranks only accept it.")

#endif
