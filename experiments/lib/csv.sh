# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the experiment scripts: CSV_AWK, awk functions that read a CSV's fields by the
# names of its header line, to put in front of an awk program (awk -F, "$CSV_AWK"'...'):
#
#   NR == 1 { csv_header(); next }      (or at each part's header line)
#   col("procs") == 4 && col("verify") == "OK" { ... col("median_s") ... }
#
# A name the header does not have stops the program with one line on stderr (exit 2).
CSV_AWK='
function csv_header(   i) { split("", CSV_COL); for (i = 1; i <= NF; i++) CSV_COL[$i] = i }
function col(name) {
    if (!(name in CSV_COL)) { printf "no column %s in the CSV header\n", name > "/dev/stderr"; exit 2 }
    return $(CSV_COL[name])
}
'
