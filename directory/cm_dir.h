/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The distributed page directory (Cashmere, HPCA'96 section 2.2). One entry
 * per shared page, kept at the page's directory home (page mod nprocs): the
 * sharing set (processes that have the page mapped), the writers among them,
 * the data home, and the orthogonal UNSAFE flag. The page's global state is
 * derived from the sets:
 *
 *   UNCACHED  nobody uses the page
 *   SHARED    one or more processes use it, nobody writes
 *   DIRTY     exactly one process uses it, and writes it
 *   WEAK      two or more use it and at least one writes
 *
 * Every update is an atomic read-modify-write with respect to other processes.
 * Two implementations sit behind cm_dir_update: the paper's per-entry MCS lock
 * with the entry fetch pipelined behind the lock's fetch-and-store (up to 64
 * processes), and a single 64-bit compare-and-swap word (up to 16).
 */
#ifndef CM_DIR_H
#define CM_DIR_H

#include "cm.h"
#include "rma/cm_rma.h"

#include <stdbool.h>
#include <stdint.h>

#define CM_DIR_MAX_PROCS_MCS 64
/* Bytes per entry slot and per process's queue node in the metadata segment. */
#define CM_DIR_ENTRY_BYTES 64
#define CM_DIR_QNODE_BYTES 64
#define CM_DIR_MAX_PROCS_CAS 16

#define CM_DIR_UNSAFE     0x1u /* transitions to WEAK send no notices; sharers check at acquire */
#define CM_DIR_HOME_FIXED 0x2u /* the home no longer follows the round-robin rule */
#define CM_DIR_BUSY       0x4u /* (CAS form) the updater is still acting on its transition */
#define CM_DIR_CURRENT    0x8u /* written since the initialization phase ended (cm_dir_reset_local) */

typedef enum { CM_PAGE_UNCACHED, CM_PAGE_SHARED, CM_PAGE_DIRTY, CM_PAGE_WEAK } cm_page_state_t;

/*
 * CAS form: a word's tag counts the writers that left (mod 2^24), so that a word seen twice
 * the same had no writer leave between: a copy got after the first sighting then holds
 * every write of a writer that is not in the word (cm_fill_page.c, cm_prefetch.h). Without
 * it a writer that joined, wrote and left between the two leaves the word as it was. The
 * first sighting is this process's last update or peek of the page, which may be old, so a
 * narrow tag could come round: 7 bits did after 128 leaves, which a page written under a lock
 * by the others reaches in milliseconds. 24 bits come round after 16.8 million leaves of one
 * page while this process did not look at it (each leave a remote compare-and-swap: minutes
 * of nothing else), and only then matter if the last of them falls in the one round trip of
 * this process's join, with sharers, writers, home and flags all as it last saw them. The
 * word makes room by holding 16 processes (CM_DIR_MAX_PROCS_CAS; more use the MCS form).
 */
#define CM_DIR_LEAVES_MASK 0xffffffu

typedef struct {
    uint64_t sharers;  /* bit r: rank r has the page mapped */
    uint64_t writers;  /* subset of sharers that wrote it since mapping it */
    uint32_t home;     /* valid when CM_DIR_HOME_FIXED, else page % nprocs */
    uint32_t flags;
    uint32_t leaves;   /* writers that left, mod CM_DIR_LEAVES_MASK + 1 (the CAS word's tag) */
} cm_dir_entry_t;

typedef enum {
    CM_DIR_JOIN,   /* page fault: join the sharing set */
    CM_DIR_WRITE,  /* first write since joining (processed at release): join the writers */
    CM_DIR_LEAVE   /* self-invalidation: leave both sets */
} cm_dir_op_t;

/* What an update asks the caller to do. */
typedef struct {
    uint64_t        version;       /* the page's version after the update (see cm_dir_update) */
    cm_page_state_t before, after;
    uint64_t        notify;        /* post write notices to these ranks (never includes me) */
    bool            self_notice;   /* post a write notice to myself */
    bool            became_unsafe; /* this update marked the page UNSAFE */
    bool            claimed_home;  /* first touch: I am now the page's home ... */
    uint32_t        old_home;      /* ... and must copy it from here if that is not me */
    bool            as_seen;       /* cm_dir_update_seen: the entry was still the word seen */
    uint64_t        writers_found; /* add form, a JOIN: the other writers its add found (the
                                    * caller may tell them: a notice to a writer is advisory) */
} cm_dir_effects_t;

/* The global state a pair of sets stands for. */
cm_page_state_t cm_dir_state(uint64_t sharers, uint64_t writers);
const char *cm_dir_state_name(cm_page_state_t s);

/*
 * The protocol's transition function, pure: applies op by rank `me` to *e in
 * place and says what has to happen. first_touch: the initialization phase is
 * over and homes move to the first process that touches a page. home_rr is
 * the page's round-robin home (page % nprocs).
 *
 * Notices follow one invariant: every sharer of a WEAK, safe page holds an
 * unconsumed write notice for it. So on a transition into WEAK every sharer
 * gets one (the others remotely, me on my own list), and whoever joins a page
 * that is already WEAK posts one to itself. A transition that would need more
 * than unsafe_threshold remote notices also marks the page UNSAFE (the notices
 * still go out that once); later transitions of an UNSAFE page send none.
 *
 * Whoever sees WEAK relies on those notices and posts nothing (a writer whose
 * transition finds the page WEAK releases its lock at once), so they must be
 * in their rings before anyone can see the state: cm_dir_update posts them
 * while it still holds the entry (see cm_dir_held_fn_t).
 */
void cm_dir_apply(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr, bool first_touch,
                  unsigned unsafe_threshold, cm_dir_effects_t *fx);

/*
 * The add form's transition (issue 45; tests/model/dir_add.pml), pure: op by `me` applied to
 * *e as the add that performs it does, and what has to happen. The entry is never held, so the
 * rule relies on nobody's notices but one's own: a JOIN that finds another writer notices
 * itself (fx->self_notice); a WRITE posts a notice to every other sharer of the word it finds
 * (fx->notify, at its release), unless the page is UNSAFE, and makes it UNSAFE when those are
 * more than unsafe_threshold (they still go out that once); a LEAVE of a writer moves the tag,
 * which is the unsafe pages' version. A first touch claims the home as in cm_dir_apply (a
 * compare-and-swap, not an add).
 */
void cm_dir_apply_add(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr,
                      bool first_touch, unsigned unsafe_threshold, cm_dir_effects_t *fx);

/*
 * The add form: what op by `me` adds to the entry's word (cm_dir_cas_pack's layout), given
 * whether `me` is a writer of the page (for a LEAVE). Only a process's own bits change, and it
 * knows them: a JOIN adds its sharer bit (clear), a WRITE its writer bit (clear, a sharer), a
 * LEAVE takes both off and adds one to the tag (which wraps at 24 bits off the top of the word).
 */
uint64_t cm_dir_add_delta(cm_dir_op_t op, int me, bool writer);

/* MCS: the paper's entry lock; CAS: one compare-and-swap word; ADD: that word changed by adds
 * that never hold it (cm_dir_add.c), with the notice rule of cm_dir_apply_add. */
typedef enum { CM_DIR_IMPL_MCS, CM_DIR_IMPL_CAS, CM_DIR_IMPL_ADD } cm_dir_impl_t;

/* Where the directory lives in the processes' metadata segments (same offsets in each). */
typedef struct {
    char     *base;     /* the segment: same address in every process */
    size_t   entries;   /* offset of the entries each process hosts, CM_DIR_ENTRY_BYTES each:
                           page p at rank p % nprocs, index p / nprocs */
    uint64_t per_proc;  /* entries hosted per process: ceil(npages / nprocs) */
    size_t   qnode;     /* offset of each process's queue node (CM_DIR_QNODE_BYTES) */
} cm_dir_seg_t;

typedef struct {
    cm_rma_t               *rma;
    int                    rank;
    int                    nprocs;
    cm_dir_impl_t          impl;
    cm_dir_seg_t           seg;
    unsigned               unsafe_threshold;
    bool                   first_touch;    /* set when the initialization phase ends */
    bool                   reset;          /* the initialization phase ended: entries without
                                              CM_DIR_CURRENT are from before and count as empty */
    uint64_t               updates;        /* directory read-modify-writes issued */
    uint64_t               home_joins;     /* add form: joins of pages homed here, not waited for */
    bool                   adds_unfenced;  /* add form: adds not waited for since the last fence */
    uint64_t               *unfenced;      /* add form: per page, the transport's mark
                                              (cm_rma_issued) after its latest add not waited
                                              for; only updates of that page fence behind it */
    uint64_t               retries;        /* CAS form: failed compare-and-swaps */
    uint64_t               *guess;         /* CAS form: per page, the entry word as we last saw
                                              it (0: none), the compare value of the next update
                                              of a remote entry instead of a read */
    size_t                 guess_len;      /* bytes mapped at guess (and unfenced after it) */
    uint64_t               zero_peeked;    /* add form: 1 + the page whose word cm_dir_add_peek
                                              last read as 0, which the guess cannot hold */
} cm_dir_t;

/*
 * The part of a transition that others rely on as soon as they can see the
 * new entry, run while the updater still holds it: nobody else reads or
 * changes the entry until it returns (MCS form: the entry lock is held; CAS
 * form: the word carries CM_DIR_BUSY, which every other updater waits out).
 * It is called only when the effects have such work (cm_dir_effects_held):
 *   - fx->notify: post those write notices, reserved in their targets' rings
 *     when it returns (cm_wn_post). The ordering invariant (docs/ARCHITECTURE.md): a
 *     notice is drainable no later than the WEAK state that makes others post
 *     nothing. Posting after releasing the entry lost lock-protected updates
 *     (litmus wordlocks; tests/model/ has the counterexample).
 *   - fx->claimed_home with another old home: copy the page in before anyone
 *     can see the new home.
 */
typedef cm_status_t (*cm_dir_held_fn_t)(uint64_t page, const cm_dir_effects_t *fx, void *arg);

/* Whether the effects need the held callback. */
static inline bool cm_dir_effects_held(const cm_dir_effects_t *fx, int me)
{
    return fx->notify != 0 || (fx->claimed_home && fx->old_home != (uint32_t)me);
}

/* impl may be CM_DIR_IMPL_CAS or CM_DIR_IMPL_ADD only if nprocs <= CM_DIR_MAX_PROCS_CAS. */
cm_status_t cm_dir_init(cm_dir_t *dir, cm_rma_t *rma, cm_dir_impl_t impl, const cm_dir_seg_t *seg,
                        unsigned unsafe_threshold);

/* Releases what cm_dir_init allocated (not the entries: they are the segment's). */
void cm_dir_fini(cm_dir_t *dir);

/*
 * Atomic read-modify-write of page's entry; *after gets the new entry. held
 * (may be NULL only if the effects never need it, e.g. for CM_DIR_LEAVE) runs
 * before the entry is released.
 *
 * Each page also has a version, bumped by every writer that leaves it (before
 * the entry changes). A sharer of an UNSAFE page records the version when it
 * joins (fx->version); at acquire it invalidates its copy if the page is WEAK
 * or the version moved. The state alone is not enough: a writer that wrote,
 * released and left before the check leaves no WEAK behind, yet its writes
 * are newer than the copy.
 */
cm_status_t cm_dir_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op, cm_dir_held_fn_t held,
                          void *arg, cm_dir_entry_t *after, cm_dir_effects_t *fx);

/*
 * CAS form: the same, with `seen` (a word from cm_dir_known_home) as the first compare value;
 * fx->as_seen says whether that first swap succeeded, i.e. the entry, tag included, had not
 * changed since the word was seen (what a copy issued in between needs, cm_fill_page.c).
 */
cm_status_t cm_dir_update_seen(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                               cm_dir_held_fn_t held, void *arg, uint64_t seen,
                               cm_dir_entry_t *after, cm_dir_effects_t *fx);

/*
 * A snapshot of page's entry, then of its version, without locking
 * (acquire's check of unsafe pages). In this order: a writer that has left is
 * seen either as a writer or through the version.
 */
cm_status_t cm_dir_read(cm_dir_t *dir, uint64_t page, cm_dir_entry_t *e, uint64_t *version);

/*
 * CAS form only: a snapshot of page's entry word, issued now and complete at the caller's next
 * flush (many entries, one round trip); cm_dir_peek_entry then decodes it, and keeps it as the
 * guess of the page's next update.
 */
cm_status_t cm_dir_peek_nbi(cm_dir_t *dir, uint64_t page, uint64_t *word);
void cm_dir_peek_entry(cm_dir_t *dir, uint64_t page, uint64_t word, cm_dir_entry_t *e);

/*
 * CAS form: page's home as the entry word this process last saw (*seen) says it, if fixed there and
 * not BUSY (after the first touch a home never moves until the next reset, and its data is
 * there once the claim's BUSY is cleared, so such a word is still right).
 */
bool cm_dir_known_home(cm_dir_t *dir, uint64_t page, int *home, uint64_t *seen);

/* CAS form: whether this process is one of page's writers (exact: only its own updates change
 * its bit, and each leaves its result as the word last seen). False in the MCS form. */
bool cm_dir_is_writer(cm_dir_t *dir, uint64_t page);

/* CAS form: page's entry word as this process last saw it (its own slot, or the guess of a
 * remote one), without a round trip; false where there is none. */
bool cm_dir_seen_word(cm_dir_t *dir, uint64_t page, uint64_t *word);

/*
 * CAS form: a JOIN of page computed from `word` (as last seen or peeked) and issued as one
 * compare-and-swap without waiting; its old word lands in *old at the caller's next flush, and
 * cm_dir_join_done then says whether it took place. Only a join that needs nothing while held
 * is issued (*issued): none where the entry is BUSY or UNSAFE, or the join would claim the
 * home, post notices or make the page unsafe; those are left to the page's own fault
 * (cm_dir_update). *after and *fx are what the join did, if it took place.
 */
cm_status_t cm_dir_join_nbi(cm_dir_t *dir, uint64_t page, uint64_t word, uint64_t *old,
                            cm_dir_entry_t *after, cm_dir_effects_t *fx, bool *issued);
/* After that flush: whether the join took place (the entry was still `word`); what the swap
 * found is kept as the page's next guess. */
bool cm_dir_join_done(cm_dir_t *dir, uint64_t page, uint64_t word, uint64_t old,
                      const cm_dir_entry_t *after);

/*
 * The add form's JOIN of a fault whose page copy goes out behind it (issue 45), in one round
 * trip: where the word last seen (cm_dir_add_peek for a page never seen) lets the join be an
 * add and the page's data lives at its directory home, the add is issued there and fenced
 * (*j->issued), so that a get issued next to that rank reads the page after the join took
 * effect. The copy is then as good as one got after waiting for the join: no tag to compare.
 * *home is the data's home as that word says. cm_dir_add_join_wait completes the join, and
 * fx->as_seen says whether the copy holds (the home still that one, fixed or round-robin, and
 * no claim in progress).
 */
typedef struct {
    cm_rma_fetch_t f;
    uint64_t       old;    /* the word the add found */
    bool           issued;
} cm_dir_join_t;

cm_status_t cm_dir_add_join_issue(cm_dir_t *dir, uint64_t page, cm_dir_join_t *j, int *home);
cm_status_t cm_dir_add_join_wait(cm_dir_t *dir, uint64_t page, cm_dir_join_t *j,
                                 cm_dir_entry_t *after, cm_dir_effects_t *fx);
/*
 * The add form's JOIN of a fault on a page whose data lives here (the word last seen shows the
 * home fixed at this rank; tests/model/dir_add.pml, "the home's join"): nothing it returns is
 * needed (no copy, no self-notice, no claim), so it is an add not waited for, fenced before
 * the next update like a leave. *joined false: not such a page, the fault's own join instead.
 */
cm_status_t cm_dir_add_home_join(cm_dir_t *dir, uint64_t page, bool *joined,
                                 cm_dir_entry_t *after, cm_dir_effects_t *fx);
/* The add form: page's entry word read (one round trip) and kept as its guess, for a page
 * this process has no word of (cm_dir_seen_word false). */
cm_status_t cm_dir_add_peek(cm_dir_t *dir, uint64_t page);

/*
 * The add form's WRITE in a batch (a release's dirty pages, waited for at one flush): issued
 * as a fetching add whose old word lands in *old at the caller's next flush. *issued is false
 * where nothing was issued: a writer already, or a word this process cannot add to
 * (cm_dir_update does those). cm_dir_add_write_done then gives the WRITE's effects.
 */
cm_status_t cm_dir_add_write_nbi(cm_dir_t *dir, uint64_t page, uint64_t *old, bool *issued);
cm_status_t cm_dir_add_write_done(cm_dir_t *dir, uint64_t page, uint64_t old,
                                  cm_dir_entry_t *after, cm_dir_effects_t *fx);

/* Resets the entries this process hosts to UNCACHED, home not fixed (no concurrent use!). */
void cm_dir_reset_local(cm_dir_t *dir);

/* CAS form: packing of an entry into one word (exposed for unit tests). */
uint64_t cm_dir_cas_pack(const cm_dir_entry_t *e);
void cm_dir_cas_unpack(uint64_t w, cm_dir_entry_t *e);

#endif
