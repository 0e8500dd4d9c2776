#!/usr/bin/env bash
# Rewrites every generated block of the docs with what its command prints now (docs/writing-docs.md).
# A block is
#
#   <!-- generated: COMMAND (noise: BAND) -->
#   ...the command's standard output, each line indented four spaces (a code block)...
#   <!-- end generated -->
#
# or, with `(noise: BAND, markdown)`, the output verbatim (a table the command writes as markdown).
# COMMAND runs under `bash -o pipefail` from the repository root, so it may pipe through grep or awk.
# Only the lines between the two markers change; a file is replaced in one rename, and not at all when
# any of its commands fails. Suite docs-numbers checks the blocks against fresh runs within BAND.
#
#   scripts/regen-docs.sh                 # README.md and docs/**/*.md
#   scripts/regen-docs.sh docs/model.md   # the files named
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/ternlab ] || { echo "regen-docs: build/ternlab is missing: build first (scripts/build.sh native)" >&2; exit 1; }

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(printf '%s\n' README.md; find docs -name '*.md' | sort)
fi

start_re='^<!-- generated: (.*) \(noise: ([^)]*)\) -->$'
end_marker='<!-- end generated -->'

regenerate() {
  local file=$1 out line cmd options output n=0 in_block=0 block_line=0
  out=$(mktemp "$(dirname "$file")/.regen.XXXXXX")
  local lineno=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    if [ $in_block -eq 1 ]; then
      if [ "$line" = "$end_marker" ]; then
        in_block=0
        printf '%s\n' "$line" >>"$out"
      fi
      continue
    fi
    printf '%s\n' "$line" >>"$out"
    [[ $line =~ $start_re ]] || continue
    cmd=${BASH_REMATCH[1]}
    options=${BASH_REMATCH[2]}
    in_block=1
    block_line=$lineno
    n=$((n + 1))
    echo "regen-docs: $file:$lineno: $cmd" >&2
    if ! output=$(bash -o pipefail -c "$cmd"); then
      echo "regen-docs: $file:$lineno: the command failed; $file is unchanged" >&2
      rm -f "$out"
      return 1
    fi
    if [[ $options == *markdown* ]]; then
      printf '%s\n' "$output" >>"$out"
    else
      printf '%s\n' "$output" | sed 's/^/    /; s/^ *$//' >>"$out"
    fi
  done <"$file"
  if [ $in_block -eq 1 ]; then
    echo "regen-docs: $file:$block_line: the block has no '$end_marker' line; $file is unchanged" >&2
    rm -f "$out"
    return 1
  fi
  [ $n -gt 0 ] || { rm -f "$out"; return 0; }
  if cmp -s "$out" "$file"; then
    echo "regen-docs: $file: $n block(s), unchanged" >&2
    rm -f "$out"
    return 0
  fi
  chmod --reference="$file" "$out"
  mv "$out" "$file"
  echo "regen-docs: $file: $n block(s) rewritten" >&2
}

status=0
for f in "${files[@]}"; do
  regenerate "$f" || status=1
done
exit $status
