/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TreadMarks programming interface (Keleher's thesis; TreadMarks 1.0
 * user manual) over Cashmere-RMA, under either protocol (CM_PROTOCOL).
 * Programs written for TreadMarks build unmodified against this header
 * (also installed as Tmk.h) and libcashmere.
 *
 * Differences from the original, all documented in docs/PORTING.md:
 * - Tmk_distribute copies a global (file-scope or static) variable of the
 *   program to the other processes; they see the value at their next
 *   Tmk_barrier, Tmk_lock_acquire or condition wait that follows the call
 *   (the original delivered it before returning). Stack and malloc memory
 *   differ between processes and are refused with an error.
 * - Tmk_sched_* (fork-join) and the Tmk_stat counters are not provided;
 *   CM_STATS prints the runtime's statistics.
 */
#ifndef CM_TMK_H
#define CM_TMK_H

#ifdef __cplusplus
extern "C" {
#endif

#define TMK_NPROCS    64
#define TMK_NBARRIERS 32
#define TMK_NCONDS    4
#define TMK_NLOCKS    1024

struct Tmk {
    unsigned proc_id;
    unsigned nprocs;
    unsigned page_size;
    unsigned npages;
};
extern struct Tmk tmk_;

#define Tmk_proc_id   tmk_.proc_id
#define Tmk_nprocs    tmk_.nprocs
#define Tmk_page_size tmk_.page_size
#define Tmk_npages    tmk_.npages

/* Joins the job (every process runs main, SPMD) and fills in tmk_. */
void Tmk_startup(int argc, char *const *argv);
/* Waits for every process, leaves the job and exits with status. */
void Tmk_exit(int status) __attribute__((__noreturn__));

/* Global barrier; the id is accepted for compatibility (all barriers are global). */
void Tmk_barrier(unsigned barrier_id);
void Tmk_lock_acquire(unsigned lock_id);
void Tmk_lock_release(unsigned lock_id);
/* Condition variables of a lock; the caller holds lock_id. Waits may wake spuriously. */
void Tmk_lock_cond_wait(unsigned lock_id, unsigned cond_id);
void Tmk_lock_cond_signal(unsigned lock_id, unsigned cond_id);
void Tmk_lock_cond_broadcast(unsigned lock_id, unsigned cond_id);

/* Non-collective shared allocation (this process's arena, CM_LOCAL_HEAP). */
void *Tmk_malloc(unsigned size);
void Tmk_free(void *ptr);
void *Tmk_sbrk(unsigned incr);
/* Copies the private global object [ptr, ptr+size) to the same object in every other process. */
void Tmk_distribute(const void *ptr, int size);

#ifdef __cplusplus
}
#endif

#endif /* CM_TMK_H */
