/* TreadMarks programs include "Tmk.h". */
#include <tmk.h>
