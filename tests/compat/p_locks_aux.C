/* SPDX-License-Identifier: BSD-3-Clause */
/* A second compilation unit of p_locks (`EXTERN_ENV'). */
EXTERN_ENV

long p_locks_checksum(const long *a, long n);

long p_locks_checksum(const long *a, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += a[i] * (i % 7 + 1);
    }
    return s;
}
