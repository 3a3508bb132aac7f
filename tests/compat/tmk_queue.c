/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A TreadMarks program with irregular sharing: every process allocates list
 * nodes on its own with Tmk_malloc (non-collective) and pushes them on one
 * shared list under a lock; process 0 waits on a condition variable of that
 * lock until every node is in, then checks that each (process, sequence)
 * pair is there exactly once with its payload. The head of the list comes
 * from process 0 through Tmk_distribute.
 *
 *   cmrun -n P tmk_queue [nodes per process]
 */
#include <Tmk.h>

#include <stdio.h>
#include <stdlib.h>

#define LIST_LOCK 3
#define ALL_IN    1 /* condition of LIST_LOCK */

typedef struct node {
    struct node *next;
    int owner, seq;
    double payload[6];
} node_t;

typedef struct {
    node_t *head;
    int count;
} list_t;

static list_t *list;

int main(int argc, char **argv)
{
    int per = (argc > 1) ? atoi(argv[1]) : 50;
    node_t **mine;

    Tmk_startup(argc, argv);
    if (Tmk_proc_id == 0) {
        list = Tmk_malloc(sizeof(*list));
        list->head  = NULL;
        list->count = 0;
        Tmk_distribute(&list, sizeof(list));
    }
    Tmk_barrier(0);

    mine = malloc(sizeof(*mine) * (size_t)per);
    for (int s = 0; s < per; s++) {
        node_t *n = Tmk_malloc(sizeof(*n));
        n->owner = (int)Tmk_proc_id;
        n->seq   = s;
        for (int k = 0; k < 6; k++) {
            n->payload[k] = Tmk_proc_id * 1000.0 + s + k / 8.0;
        }
        mine[s] = n;
        Tmk_lock_acquire(LIST_LOCK);
        n->next    = list->head;
        list->head = n;
        list->count++;
        if (list->count == per * (int)Tmk_nprocs) {
            Tmk_lock_cond_signal(LIST_LOCK, ALL_IN);
        }
        Tmk_lock_release(LIST_LOCK);
    }

    int status = 0;
    if (Tmk_proc_id == 0) {
        int *seen = calloc((size_t)per * Tmk_nprocs, sizeof(int)), bad = 0, count = 0;
        Tmk_lock_acquire(LIST_LOCK);
        while (list->count < per * (int)Tmk_nprocs) {
            Tmk_lock_cond_wait(LIST_LOCK, ALL_IN);
        }
        for (node_t *n = list->head; n != NULL; n = n->next, count++) {
            if (n->owner < 0 || n->owner >= (int)Tmk_nprocs || n->seq < 0 || n->seq >= per) {
                bad++;
                continue;
            }
            seen[n->owner * per + n->seq]++;
            for (int k = 0; k < 6; k++) {
                bad += n->payload[k] != n->owner * 1000.0 + n->seq + k / 8.0;
            }
        }
        Tmk_lock_release(LIST_LOCK);
        for (int i = 0; i < per * (int)Tmk_nprocs; i++) {
            bad += seen[i] != 1;
        }
        printf("tmk_queue: %d processes, %d nodes listed: %s\n", (int)Tmk_nprocs, count,
               (bad == 0 && count == per * (int)Tmk_nprocs) ? "OK" : "FAILED");
        status = !(bad == 0 && count == per * (int)Tmk_nprocs);
        free(seen);
    }
    Tmk_barrier(1); /* nobody frees a node while process 0 walks the list */
    for (int s = 0; s < per; s++) {
        Tmk_free(mine[s]);
    }
    free(mine);
    Tmk_exit(status);
}
