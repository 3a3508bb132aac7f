/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one error idiom. A function that fails returns a negative cm_status_t, logged once
 * where the failure was found (cm_error). A call whose failure leaves nothing to undo is
 * wrapped in CM_CHECK, which returns its status; where something must be undone, the failure
 * jumps to an err_<undo> label at the function's end, which undoes in reverse order. Where
 * the success path ends with the same undoing (a lock held for the whole function, buffers
 * freed either way), the label is out_<undo> and both paths meet there: no chains of
 * "if (status == CM_OK)".
 *
 * cm_assert states an invariant the protocol relies on (a page table flag, an ordering
 * invariant's precondition, a ring index in range). In a debug build (configure
 * --enable-debug, CI's distcheck build) a false one ends the process with the expression and
 * its place, in one line; otherwise it compiles to nothing (the expression is still checked
 * by the compiler, never evaluated).
 */
#ifndef CM_ERROR_H
#define CM_ERROR_H

#include "cm.h"

#define CM_CHECK(expr) \
    do { \
        cm_status_t cm_check_st_ = (expr); \
        if (cm_check_st_ != CM_OK) { \
            return cm_check_st_; \
        } \
    } while (0)

void cm_assert_fail(const char *expr, const char *file, int line, const char *func)
    __attribute__((noreturn));

#ifdef CM_DEBUG
#define cm_assert(expr) \
    ((expr) ? (void)0 : cm_assert_fail(#expr, __FILE__, __LINE__, __func__))
#else
#define cm_assert(expr) ((void)sizeof(!(expr)))
#endif

#endif
