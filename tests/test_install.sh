#!/usr/bin/env bash
# test_install.sh: an installed bellows, away from its source tree and build folder. Installs
# the build into a temporary prefix (cmake --install --prefix), moves the prefix elsewhere (an
# installed tree must not depend on where it was installed, nor on the checkout), and from
# there: runs the README's main job, shrunk to seconds (the ResNet-18 workload, analytic
# collectives, its plots drawn by the installed gnuplot scripts); builds a C plugin with the
# installed header through pkg-config and runs it; runs a Python policy from the installed
# examples (bellows_policy.py found beside the binary, and refused once it differs from the
# fields the binary fills); checks the generated man page and bash completion; and, where
# dpkg-deb is present, that CPack's .deb holds the same tree under /usr and runs unpacked.
#   tests/test_install.sh BUILD_DIR with|without   (Python policies built or not)
set -euo pipefail
build=$(cd "$1" && pwd)
python=${2:-with}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/p" > /dev/null
mv "$tmp/p" "$tmp/moved"
P=$tmp/moved
bellows=$P/bin/bellows
for f in bin/bellows share/bellows/plots/run.gp share/bellows/plots/common.gp \
         include/bellows/bellows_policy.h share/pkgconfig/bellows-policy.pc \
         share/man/man1/bellows.1 share/bash-completion/completions/bellows \
         share/doc/bellows/README.md share/doc/bellows/examples/halfway.c \
         share/doc/bellows/docs/README.md share/doc/bellows/docs/reference/run.md; do
  [ -f "$P/$f" ] || fail "$f not installed"
done
if [ "$python" = with ]; then
  for f in share/bellows/python/bellows_policy.py share/doc/bellows/examples/accordion.py; do
    [ -f "$P/$f" ] || fail "$f not installed"
  done
fi
cd "$tmp"

# the README's main job (bellows compare --workload resnet18-cifar --collectives analytic),
# one seed, one epoch of 4096 images; the plots prove the installed scripts are found
"$bellows" compare --workload resnet18-cifar --collectives analytic --seeds 1 --epochs 1 \
  --train-samples 4096 --test-samples 500 --out cmp > cmp.txt
grep -q "^accordion " cmp.txt && [ "$(grep -c ',completed,' cmp/compare.csv)" -eq 4 ] \
  || { cat cmp.txt; fail "the main job"; }
for plot in accuracy_vs_time accuracy_vs_bytes bytes_vs_time time_breakdown schedule; do
  [ -s "cmp/$plot.png" ] && [ -s "cmp/$plot.svg" ] || fail "cmp/$plot not drawn"
done

# a C plugin built against the installed header, found by pkg-config
cflags=$(echo $(PKG_CONFIG_PATH=$P/share/pkgconfig pkg-config --cflags bellows-policy))
[ "$cflags" = "-I$P/share/pkgconfig/../../include/bellows" ] || [ "$cflags" = "-I$P/include/bellows" ] \
  || fail "pkg-config --cflags: $cflags"
cp "$P/share/doc/bellows/examples/halfway.c" .
cc -shared -fPIC $cflags -o halfway.so halfway.c
S="--train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 32 --quiet"
"$bellows" run $S --policy ./halfway.so --out plugin > /dev/null
grep -q '"status": "completed"' plugin/summary.json || fail "the plugin's run"

if [ "$python" = with ]; then
  cp "$P/share/doc/bellows/examples/netaware.py" .
  "$bellows" run $S --policy ./netaware.py --out py > /dev/null
  grep -q '"status": "completed"' py/summary.json && grep -q '"rank=' py/steps.csv \
    || fail "the Python policy's run"
  # a module whose fields differ from what this binary fills is refused, naming the field
  sed -i 's/^        "wait_s": .*$//' "$P/share/bellows/python/bellows_policy.py"
  set +e
  "$bellows" run $S --policy ./netaware.py --out py2 > /dev/null 2> err.txt
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q 'Observation.FIELDS lacks "wait_s"' err.txt || { cat err.txt; fail "drift"; }
else
  printf 'import bellows_policy\n' > p.py
  set +e
  "$bellows" run $S --policy ./p.py > /dev/null 2> err.txt
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q 'built without Python policies; install libpython3-dev' err.txt \
    || { cat err.txt; fail "without Python"; }
fi

# the man page: every command's section and its flags, and troff without warnings
man1=$P/share/man/man1/bellows.1
for c in run compare replay sweep merge reproduce plot train models platform policies compressors workloads; do
  grep -q "^\.SH \"BELLOWS $(echo "$c" | tr a-z A-Z)\"" "$man1" || fail "man page: no $c"
done
grep -q '^\\fB\\-\\-workload\\fR' "$man1" || fail "man page: no --workload"
if command -v groff > /dev/null; then
  [ -z "$(groff -man -Tutf8 -ww -z "$man1" 2>&1)" ] || fail "groff warns about the man page"
fi
# the bash completion: commands, flags, choices, policy names
complete_of() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bellows; echo "${COMPREPLY[*]}"' \
    _ "$P/share/bash-completion/completions/bellows" "$@"
}
[ "$(complete_of bellows comp)" = "compare compressors" ] || fail "completion of commands"
[ "$(complete_of bellows run --workl)" = "--workload" ] || fail "completion of flags"
[ "$(complete_of bellows run --model "")" = "softmax mlp cnn resnet" ] || fail "completion of choices"
[ "$(complete_of bellows compare --policy acc)" = "accordion" ] || fail "completion of policies"

# the Debian package
if command -v dpkg-deb > /dev/null && command -v cpack > /dev/null; then
  (cd "$build" && cpack -G DEB -B "$tmp/deb" > cpack.txt 2>&1) || { cat cpack.txt; fail "cpack"; }
  deb=$(ls "$tmp"/deb/bellows_*.deb)
  dpkg-deb -c "$deb" | awk '{print $6}' | sort > deb.txt
  for f in ./usr/bin/bellows ./usr/share/bellows/plots/run.gp ./usr/include/bellows/bellows_policy.h \
           ./usr/share/man/man1/bellows.1 ./usr/share/pkgconfig/bellows-policy.pc; do
    grep -qx "$f" deb.txt || fail "the .deb lacks $f"
  done
  dpkg-deb -f "$deb" Depends | grep -q 'libsimgrid' || fail "the .deb's Depends: $(dpkg-deb -f "$deb" Depends)"
  # unpacked anywhere, its bellows finds its files under its own usr/
  dpkg-deb -x "$deb" unpacked
  (cd "$tmp" && unpacked/usr/bin/bellows run $S --policy ./halfway.so --out deb-run > /dev/null) \
    || fail "the .deb's bellows"
  if [ "$python" = with ]; then
    unpacked/usr/bin/bellows policies --python > doc.txt && grep -q "class Observation" doc.txt \
      || fail "the .deb's Python module"
  fi
fi
echo "ok"
