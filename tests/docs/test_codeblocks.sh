#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every program the documentation presents compiles: each fenced ```c block of README.md and
# docs/*.md that holds `int main`, and each example block (.EX/.EE, .nf/.fi) of the manual
# pages that holds `main(`, built and linked with the build tree's cmcc, as a reader would
# build it. A Markdown block marked <!-- fragment --> on the line before it is not a program:
# it is checked with cc -fsyntax-only. A block that does not compile fails the test, named by
# its file and line (each block starts with a #line directive, so the compiler's own messages
# point into the document); finding no block at all fails too. The README's first program
# must also print what the README says it prints.
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CMCC="$top_builddir/src/tools/cmcc"
# Uninstalled: headers from the source tree, libraries from the build tree (as test_cmcc.sh).
build=(-I"$top_srcdir/include" -L"$top_builddir/.libs" -L"$top_builddir" -Wall -Werror)
export LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# md_blocks FILE NAME: each ```c block of a Markdown file into $tmp/b<N>.c (N counts the blocks of
# every file), with a line "NAME LINE KIND" in $tmp/blocks (KIND: fragment if the line before the
# fence says so, else block).
md_blocks() {
    awk -v dir="$tmp" -v name="$2" -v n="$(wc -l <"$tmp/blocks")" '
        function flush() { if (f != "") close(f); f = "" }
        !inb && /^[ \t]*```/ {
            lang = $0; sub(/^[ \t]*```[ \t]*/, "", lang); sub(/[ \t{].*$/, "", lang)
            inb = 1; f = ""
            if (lang == "c") {
                n++
                f = sprintf("%s/b%03d.c", dir, n)
                printf "#line %d \"%s\"\n", FNR + 1, name > f
                kind = (prev ~ /<!--[ \t]*fragment[ \t]*-->/) ? "fragment" : "block"
                printf "%s %d %s\n", name, FNR + 1, kind >> (dir "/blocks")
            }
            next
        }
        inb && /^[ \t]*```[ \t]*$/ { inb = 0; flush(); next }
        inb { if (f != "") print > f; next }
        /[^ \t]/ { prev = $0 }
    ' "$1"
}

# man_blocks FILE NAME: each .EX/.EE or .nf/.fi block of a manual page, roff escapes undone.
man_blocks() {
    awk -v dir="$tmp" -v name="$2" -v n="$(wc -l <"$tmp/blocks")" '
        /^\.(EX|nf)([ \t]|$)/ && !inb {
            inb = 1
            n++
            f = sprintf("%s/b%03d.c", dir, n)
            printf "#line %d \"%s\"\n", FNR + 1, name > f
            printf "%s %d man\n", name, FNR + 1 >> (dir "/blocks")
            next
        }
        /^\.(EE|fi)([ \t]|$)/ && inb { inb = 0; close(f); next }
        inb {
            s = $0
            gsub(/\\f[BIRP]/, "", s); gsub(/\\\(aq/, "\047", s); gsub(/\\\(dq/, "\"", s)
            gsub(/\\-/, "-", s); gsub(/\\&/, "", s); gsub(/\\e/, "\\", s); gsub(/\\\\/, "\\", s)
            print s > f
        }
    ' "$1"
}

: >"$tmp/blocks"
for f in "$top_srcdir/README.md" "$top_srcdir"/docs/*.md; do
    [ -f "$f" ] && md_blocks "$f" "${f#"$top_srcdir"/}"
done
# cashmere(7) is written at build time: the build tree's copy (in-tree builds list it once).
mans=("$top_srcdir"/man/*.1 "$top_srcdir"/man/*.7)
[ "$(cd "$top_builddir" && pwd -P)" = "$(cd "$top_srcdir" && pwd -P)" ] ||
    mans+=("$top_builddir"/man/*.7)
for f in "${mans[@]}"; do
    [ -f "$f" ] || continue
    case "$f" in "$top_srcdir"/*) name=${f#"$top_srcdir"/} ;; *) name=${f#"$top_builddir"/} ;; esac
    man_blocks "$f" "$name"
done

note "compile every program and marked fragment"
# compiles WHAT COMMAND...: runs the compiler; on failure says so for $file:$line, with its output.
compiles() {
    local what=$1 msg
    shift
    msg=$("$@" 2>&1) && return 0
    echo "FAIL: $file:$line: this $what does not compile:"
    printf '%s\n' "$msg" | sed 's/^/  | /'
    bad=$((bad + 1))
    return 1
}

n=0 programs=0 fragments=0 skipped=0 bad=0 first=""
while read -r file line kind; do
    n=$((n + 1))
    src=$(printf '%s/b%03d.c' "$tmp" "$n")
    if grep -q 'int main' "$src" || { [ "$kind" = man ] && grep -q 'main(' "$src"; }; then
        compiles program "$CMCC" "${build[@]}" "$src" -o "$tmp/prog$n" -lm || continue
        echo "$file:$line: program compiled"
        programs=$((programs + 1))
        [ -z "$first" ] && [ "$file" = README.md ] && first=$n
    elif [ "$kind" = fragment ]; then
        compiles fragment cc -fsyntax-only -Wall -Werror -I"$top_srcdir/include" -x c "$src" || continue
        echo "$file:$line: fragment compiled (syntax only)"
        fragments=$((fragments + 1))
    elif [ "$kind" = man ]; then
        skipped=$((skipped + 1)) # a shell or Makefile example: no C program
    else
        echo "FAIL: $file:$line: a C block with no main: make it a whole program, or mark it"
        echo "  <!-- fragment --> on the line before its fence"
        bad=$((bad + 1))
    fi
done <"$tmp/blocks"
echo "$((programs + fragments)) blocks compiled: $programs programs, $fragments fragments" \
     "($skipped example blocks of the manual pages are no C programs)"
[ "$bad" -eq 0 ] || fail "$bad block(s) do not compile"
[ "$programs" -gt 0 ] || fail "no program found in README.md, docs/*.md or the manual pages"

note "the README's first program prints what the README says"
[ -n "$first" ] || fail "README.md presents no program"
# What it prints: the first ```text block after the program.
want=$(awk -v from="$(sed -n 's/^README.md \([0-9]*\) .*/\1/p' "$tmp/blocks" | head -1)" '
    FNR > from && /^```text[ \t]*$/ { inb = 1; next }
    inb && /^```/ { exit }
    inb { print }' "$top_srcdir/README.md")
[ -n "$want" ] || fail "README.md shows no output (a \`\`\`text block) after its first program"
expect_ok "$CMRUN" -n 2 "$tmp/prog$first"
[ "$out" = "$want" ] || fail "the README's first program printed '$out', the README says '$want'"
echo "PASS"
