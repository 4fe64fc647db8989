#!/bin/sh
# Stands in for mpirun in tests: runs the job with $REAL_MPIRUN, then
# overwrites the last element of rank $CORRUPT_RANK's first output (an f32)
# with +inf, as a rank whose copy of a replicated output went wrong.
"$REAL_MPIRUN" "$@" || exit $?
for arg in "$@"; do
  case "$arg" in
    --worker=*) dir="${arg#--worker=}" ;;
  esac
done
file="$dir/out0.rank$CORRUPT_RANK.npy"
size=$(stat -c %s "$file") || exit 1
printf '\000\000\200\177' | dd of="$file" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null
