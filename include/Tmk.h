/* SPDX-License-Identifier: BSD-3-Clause */
/* TreadMarks programs include "Tmk.h". */
#include <tmk.h>
