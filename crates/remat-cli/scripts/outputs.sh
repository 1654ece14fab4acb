#!/usr/bin/env bash
# The CLI's behaviour as bytes, to compare two builds of `remat` (a refactor
# must not change them): every subcommand on the examples, good and bad
# input; stdout, stderr and the exit status of each. `bench` timings are
# masked (digits → N).
#
#   scripts/outputs.sh OLD_BIN NEW_BIN     # prints the differences, if any
#   scripts/outputs.sh BIN DIR             # (DIR not a file) records BIN's into DIR
#
# Both binaries must be called `remat` (clap's usage lines print the name).
set -u
if [ -f "$2" ]; then
  dir=$(mktemp -d)
  "$0" "$1" "$dir/old" && "$0" "$2" "$dir/new"
  diff -r "$dir/old" "$dir/new" && echo "no differences ($(ls "$dir/old" | grep -c cmd) commands)"
  rm -rf "$dir"
  exit 0
fi
BIN=$(realpath "$1"); OUT=$2; rm -rf "$OUT"; mkdir -p "$OUT"
W=$(mktemp -d)
n=0
run() { n=$((n+1)); local f="$OUT/$(printf %03d $n)"; echo "$*" > "$f.cmd"
  (cd "$W" && "$BIN" "$@" > "$f.out" 2> "$f.err"; echo $? > "$f.rc"); sed -i "s#$W#W#g" "$f.out" "$f.err"
  if [ "$1" = bench ]; then sed -i 's/[0-9][0-9.e+-]*/N/g' "$f.out"; fi; }
run algorithms
run examples
run examples --write teaching
run examples --write nope
run examples --write teaching -o teaching.json
for ex in teaching vgg19 resnet50; do
 for alg in store-all sequential revolve rotor pofo offload-only opportunist autocapper; do
  for b in 60% 100% 30% 1MiB; do
   run solve example:$ex -a $alg -b $b --json
   run solve example:$ex -a $alg -b $b --bandwidth 12GB/s
  done
 done
done
run solve example:teaching -a sequential -b 100% --segments 3 --json -o seq.json
run solve example:teaching -a sequential -b 100% --segments 2 -o seq2.json
run solve example:teaching -a rotor -b 40% -o rotor.json --json
run solve example:teaching -a pofo -b 50% --bandwidth 12GB/s -o pofo.json
run solve example:teaching -a rotor -b 1MiB -o never.json
run solve example:teaching -a pofo -b 600MiB --loss-step overlap --slots 30 --max-table 1GiB --json
run solve teaching.json -a rotor -b 60% --json
for s in seq.json seq2.json rotor.json pofo.json; do
  run simulate example:teaching $s
  run simulate example:teaching $s --json
  run simulate example:teaching $s --states
  run simulate example:teaching $s --json --states
  run simulate example:teaching $s --bandwidth 1GB/s --json
  run simulate example:vgg19 $s
  run export $s --to pytorch-segments
  run export $s --to pytorch-segments --json
done
run export seq.json --to keras
run sweep example:teaching --points 5
run sweep example:teaching --points 3 --format json
run sweep example:teaching --points 4 --algorithms rotor,revolve,pofo,offload-only
run sweep example:teaching --points 4 --algorithms rotor,revolve,pofo,offload-only --format json
run sweep example:vgg19 --points 3 --algorithms rotor,revolve,sequential --memory grid --format json
run sweep example:teaching --alpha 0.2 --bandwidth 1GB/s,12GB/s,450GB/s --algorithms rotor,pofo
run sweep example:teaching --alpha 1.5
run sweep example:teaching --alpha 0.5 --memory exact --algorithms pofo --format json
run sweep example:teaching --points 1
run sweep example:teaching --points 10000000000000000000
run sweep example:teaching --algorithms rotor,magic
run sweep example:teaching --algorithms pofo --slots 70000
printf '{"fw": [2, 3], "bw": [4, 5], "cw": [100, 10, 4], "cbw": [0, 20, 8], "ftmp": [0, 0], "btmp": [0, 0]}' > "$W/net.json"
run convert net.json
run convert net.json --time-unit s --name mynet --bandwidth 12Gbps
run convert net.json -o net-chain.json
run solve net-chain.json -a rotor -b 1000 --json
run convert nofile.json
# bad input
echo '{"format":"remat-chain/1","input_bytes":1,"stages":[{"forward_seconds":1,"backward_seconds":1,"output_bytes":-4,"saved_bytes":1}]}' > "$W/bad.json"
echo 'not json' > "$W/garbage.json"
run solve bad.json -a rotor -b 1GB
run solve garbage.json -a rotor -b 1GB
run simulate example:teaching garbage.json
run solve example:teaching -a rotor -b lots
run solve example:teaching -a rotor -b 1GQ
run solve example:teaching -a rotor -b 8Gb
run solve example:teaching -a rotor -b 0%
run solve example:teaching -a rotor -b x%
run solve example:teaching -a rotor -b 2000%
run solve example:teaching -a magic -b 1GB
run solve example:teaching -a rotr -b 1GB
run solve example:teaching -a Rotor -b 1GB
run solve example:teaching -a storeall -b 1GB
run solve example:teaching -a offload -b 1GB
run solve example:nope -a rotor -b 1GB
run solve /no/such/file.json -a rotor -b 1GB
run solve example:teaching -a rotor -b 1GB --slots 0
run solve example:teaching -a rotor -b 1GB --slots 100001
run solve example:teaching -a rotor -b 1GB --bandwidth fast
run solve example:teaching -a rotor -b 1GB --bandwidth 0.5
run solve example:teaching -a rotor -b 1GB --max-table lots
run solve example:teaching -a pofo -b 600MiB --slots 70000
run solve example:vgg19 -a rotor -b 2.5GiB --max-table 64KiB
run solve example:teaching -a sequential -b 1GB --segments 11
run solve example:teaching -a rotor -b 1GB --segments 2
run solve example:teaching -a rotor
run bench --stages 100000000
run bench --reps 0
run bench --stages 20 --slots 50 --reps 1 --no-pofo
run bench --stages 20 --slots 50 --reps 1 --no-pofo --json
run bench --stages 20 --slots 50 --reps 1 --json
run nosuchcommand
rm -rf "$W"
