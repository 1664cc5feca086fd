#!/usr/bin/env bash
# test_validate.sh: bellows validate's rows (sim/cli/valrows.c) and its exit status, on small
# row files of its own (tests/test_published.sh runs the real ones):
#   - a malformed row is refused with exit 2, naming the file, the line and the field, before
#     anything runs and with nothing written (--csv, --write-summary);
#   - a planted row outside its tolerance makes it exit 1, and the same row with the figure
#     bellows predicts passes (exit 0), its CSV holding the prediction;
#   - a ratio row is the quotient of its two rows' predictions; fitted rows are counted apart;
#   - a TFLOPS row is a GPU's samples a second times the workload's flops a sample.
#   tests/test_validate.sh BELLOWS_BINARY
set -uo pipefail
bellows=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
header='id,group,figure,unit,fit,tolerance,source,setting'
small='--epochs 1 --train-samples 128 --test-samples 50 --eval-every 0 --workers 2 --batch 16 --collectives analytic'
good="a,g,1000,img/s,predict,20%,a paper,$small"

# refused: exit 2, the file, line and field named, no --csv or summary written
refuse() { # FIELD-MESSAGE-PART TEXT...
  local want=$1
  shift
  rm -f "$tmp/out.csv" "$tmp/s.json"
  printf '%s\n' "$@" > "$tmp/bad.csv"
  "$bellows" validate --rows "$tmp/bad.csv" --csv "$tmp/out.csv" --write-summary "$tmp/s.json" \
    > "$tmp/stdout" 2> "$tmp/stderr"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -qF -- "$want" "$tmp/stderr" || [[ -e $tmp/out.csv ]] ||
     [[ -e $tmp/s.json ]] || [[ -s $tmp/stdout ]]; then
    echo "FAIL: expected exit 2 and '$want', got $rc: $(cat "$tmp/stderr")"
    fail=1
  else
    echo "ok: refused: $(cat "$tmp/stderr")"
  fi
}
refuse "bad.csv:1: the header must be" 'id,group,figure' "$good"
refuse "bad.csv:3: field figure" "$header" "$good" "b,g,fast,img/s,predict,20%,src,$small"
refuse "bad.csv:2: field figure" "$header" "b,g,-3,img/s,predict,20%,src,$small"
refuse "bad.csv:2: field unit" "$header" "b,g,3,img/min,predict,20%,src,$small"
refuse "bad.csv:2: field fit" "$header" "b,g,3,img/s,maybe,20%,src,$small"
refuse "bad.csv:2: field tolerance" "$header" "b,g,3,img/s,predict,0.2,src,$small"
refuse "bad.csv:2: field source" "$header" "b,g,3,img/s,predict,20%,,$small"
refuse "bad.csv:3: field id" "$header" "$good" "a,g,3,img/s,predict,20%,src,$small"
refuse "bad.csv:2: field id" "$header" "a b,g,3,img/s,predict,20%,src,$small"
refuse "bad.csv:2: fewer fields" "$header" "a,g,3,img/s"
refuse "bad.csv:2: field source: an unclosed quote" "$header" "a,g,3,img/s,predict,20%,\"src,$small"
refuse "bad.csv:3: field setting: --workers" "$header" "$good" "b,g,3,img/s,predict,20%,src,--epochs 1 --workers 0"
refuse "bad.csv:2: field setting: run: unknown flag '--bogus'" "$header" "a,g,3,img/s,predict,20%,src,--bogus 1"
refuse "bad.csv:2: field setting: setting 2 is empty" "$header" "a,g,3,img/s,predict,20%,src,$small ; "
refuse "bad.csv:3: field setting: \"zz\" is not an earlier img/s or TFLOPS row's id" "$header" "$good" "r,g,2,ratio,predict,20%,src,a / zz"
# a setting writes nothing: any flag that names a file written (or --out), even the rows file
refuse "bad.csv:2: field setting: --record-trace $tmp/bad.csv: a setting writes nothing" "$header" "a,g,3,img/s,predict,20%,src,$small --record-trace $tmp/bad.csv"
refuse "bad.csv:2: field setting: --timeline $tmp/t.json: a setting writes nothing" "$header" "a,g,3,img/s,predict,20%,src,$small --timeline $tmp/t.json"
refuse "bad.csv:2: field setting: --out $tmp/o: a setting writes nothing" "$header" "a,g,3,img/s,predict,20%,src,$small --out $tmp/o"
refuse "bad.csv: no rows" "# only a comment" "$header"
refuse "bad.csv:2: field figure: - (not published) is for an img/s row with tolerance none" "$header" "b,g,-,img/s,predict,20%,src,$small"
refuse "bad.csv:3: field figure: - (not published)" "$header" "$good" "r,g,-,ratio,predict,none,src,a / a"

# the prediction of the good setting, then planted rows around it
printf '%s\n' "$header" "$good" > "$tmp/one.csv"
"$bellows" validate --rows "$tmp/one.csv" --jobs 1 --csv "$tmp/one-out.csv" > /dev/null 2>&1
pred=$(python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["bellows"])' "$tmp/one-out.csv")
echo "the small setting: $pred img/s"
# within: the figure bellows predicts (and a ratio of the row to itself, 1), a fitted row apart
printf '%s\n' "$header" "a,g,$pred,img/s,predict,1%,src,$small" \
  "f,g,$pred,img/s,fit,1%,src,$small ; $small" "r,h,1,ratio,predict,1%,src,a / f" > "$tmp/within.csv"
"$bellows" validate --rows "$tmp/within.csv" --csv "$tmp/within-out.csv" > "$tmp/within.txt" 2>&1
rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "^  g  *median error  0.0%, worst   0.0% over 1 predicted rows; 1 fitted" "$tmp/within.txt" ||
   ! grep -q '^r,h,.*,ratio,1,1,0.0000,predict,0.01,1$' "$tmp/within-out.csv"; then
  echo "FAIL: rows at bellows' own figure: exit $rc"; cat "$tmp/within.txt" "$tmp/within-out.csv"; fail=1
else
  echo "ok: rows at the prediction pass"
fi
# a ratio of an unpublished operand (figure -): the operand prints -, the ratio its error, exit 0
printf '%s\n' "$header" "u,g,-,img/s,predict,none,src,$small" "r,g,2,ratio,predict,60%,src,u / u" > "$tmp/dash.csv"
"$bellows" validate --rows "$tmp/dash.csv" > "$tmp/dash.txt" 2>&1
rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "^u .* - .* - predict none (reported)$" "$tmp/dash.txt" ||
   ! grep -q "^r .*2.00x *1.00x  *-50.0% predict 60%$" "$tmp/dash.txt" ||
   ! grep -q "^  g  *median error 50.0%, worst  50.0% over 1 predicted rows$" "$tmp/dash.txt"; then
  echo "FAIL: an unpublished operand: exit $rc"; cat "$tmp/dash.txt"; fail=1
else
  echo "ok: an unpublished operand prints -, its ratio is checked"
fi
# a TFLOPS row (issue 50): the samples a GPU trains a simulated second x the workload's flops a
# sample (its profile's forward and backward) / 1e12, against the img/s row of the same setting;
# without a workload in flops it is refused before anything runs
refuse "bad.csv:2: field setting: a TFLOPS row needs a --workload in flops" "$header" "t,g,3,TFLOPS,predict,20%,src,$small"
wl="$small --workload gpt2-small"
refuse "bad.csv:4: field setting: \"w\" and \"t\" are of different units" "$header" \
  "w,g,1,img/s,predict,none,src,$wl" "t,g,1,TFLOPS,predict,none,src,$wl" "r,g,1,ratio,predict,none,src,w / t"
# and a ratio of two TFLOPS rows (ZeRO++'s gain over its baseline) is their quotient
printf '%s\n' "$header" "w,g,1,img/s,predict,none,src,$wl" "t,g,1,TFLOPS,predict,none,src,$wl" \
  "t4,g,1,TFLOPS,predict,none,src,$wl --bandwidth 1Gbps" "q,g,1,ratio,predict,none,src,t / t4" > "$tmp/tf.csv"
"$bellows" validate --rows "$tmp/tf.csv" --csv "$tmp/tf-out.csv" > "$tmp/tf.txt" 2>&1
rc=$?
profile="$(dirname "$0")/../sim/workload/profiles/gpt2-small.json"
if [[ $rc -ne 0 ]] || ! python3 - "$tmp/tf-out.csv" "$profile" << 'PY'
import csv, json, sys
rows = {r["id"]: r for r in csv.DictReader(open(sys.argv[1]))}
flops = sum(l["fwd_flops"] + l["bwd_flops"] for l in json.load(open(sys.argv[2]))["layers"])
want = float(rows["w"]["bellows"]) / 2 * flops / 1e12  # 2 workers
got = float(rows["t"]["bellows"])
assert rows["t"]["unit"] == "TFLOPS" and abs(got - want) <= 1e-5 * want, (got, want)
q = float(rows["t"]["bellows"]) / float(rows["t4"]["bellows"])
assert q > 1.01 and abs(float(rows["q"]["bellows"]) - q) <= 1e-3 * q, (rows["q"]["bellows"], q)
PY
then
  echo "FAIL: a TFLOPS row: exit $rc"; cat "$tmp/tf.txt" "$tmp/tf-out.csv"; fail=1
else
  echo "ok: a TFLOPS row is the img/s row's samples per GPU x the workload's flops"
fi
# outside: the same setting, the figure 30% above, tolerance 20%: exit 1, the row marked
planted=$(python3 -c "print(float('$pred') * 1.3)")
printf '%s\n' "$header" "a,g,$pred,img/s,predict,20%,src,$small" \
  "planted,g,$planted,img/s,predict,20%,src,$small" "reported,g,$planted,img/s,predict,none,src,$small" > "$tmp/out.csv.rows"
"$bellows" validate --rows "$tmp/out.csv.rows" > "$tmp/outside.txt" 2> "$tmp/outside.err"
rc=$?
if [[ $rc -ne 1 ]] || ! grep -q "^planted .*-23.1% predict 20%  OUTSIDE" "$tmp/outside.txt" ||
   ! grep -q "^reported .*none (reported)$" "$tmp/outside.txt" ||
   ! grep -q "validate: 1 row outside its tolerance" "$tmp/outside.err"; then
  echo "FAIL: a planted row outside its tolerance: exit $rc"; cat "$tmp/outside.txt" "$tmp/outside.err"; fail=1
else
  echo "ok: a planted row outside its tolerance exits 1"
fi
exit $fail
