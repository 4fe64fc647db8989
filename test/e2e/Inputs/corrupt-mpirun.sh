#!/bin/sh
# Stands in for mpirun in tests: runs the job with $REAL_MPIRUN, then
# overwrites the last element of rank $CORRUPT_RANK's first output (an f32)
# with +inf (or NaN with CORRUPT_VALUE=nan), as a rank whose copy of a
# replicated output went wrong.
"$REAL_MPIRUN" "$@" || exit $?
for arg in "$@"; do
  case "$arg" in
    --worker=*) dir="${arg#--worker=}" ;;
  esac
done
file="$dir/out0.rank$CORRUPT_RANK.npy"
size=$(stat -c %s "$file") || exit 1
if [ "$CORRUPT_VALUE" = nan ]; then
  printf '\000\000\300\177'
else
  printf '\000\000\200\177'
fi | dd of="$file" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null
