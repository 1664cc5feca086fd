# sweep.gp: the speedup of each policy over the baseline as a heatmap over bandwidth x latency,
# one panel per policy but the baseline (its speedup is 1 by definition), from a sweep folder's
# speedup_grid.dat (format in plots/plots.h: one block per policy, rows "x_index y_index
# log2_speedup bandwidth latency label", log2_speedup "-" where there is no speedup and the
# label says why: not a number, so the coloured cells skip it and a grey cell takes its place). Called by bellows (plots/plots.c) as
#   gnuplot -e "dir='DIR'; baseline='sync'; seeds=3; label1='static:level=1'; ...; n=3" sweep.gp
# The colour is log2 of the speedup on a range symmetric about 1x (white), blue faster, red
# slower, so 27x and 6x differ as much as 6x and 1.2x; cells without a speedup are grey with
# their reason. Writes DIR/speedup_heatmap.png and DIR/speedup_heatmap.svg.
load scriptdir."/common.gp"
set datafile separator whitespace
nseeds = exists("seeds") ? seeds : 1   # a speedup_grid.dat before "# seeds": one
f = dir."/speedup_grid.dat"
label(i) = value(sprintf("label%d", i))
# a long policy spec broken after commas, so a panel's title fits above it
wrap(s) = strlen(s) <= 34 ? s : (wrap_c = strstrt(s[25:], ","), wrap_c == 0 ? s : \
          s[1:24 + wrap_c]."\n".wrap(s[25 + wrap_c:]))

# the grid's extent and the colour range: at least 0.5x..2x, else the largest |log2| rounded up
stats f using 1:2 nooutput
nx = int(STATS_max_x) + 1
ny = int(STATS_max_y) + 1
m = 1
undefine STATS_*
stats f using (abs($3)) nooutput
if (exists("STATS_max")) { m = ceil(STATS_max); if (m < 1) { m = 1 } }
step = (m > 6) ? 2 : 1

cols = (n < 3) ? n : 3
rows = int((n + cols - 1) / cols)
set key off
set grid noxtics noytics
set palette defined (-1 "#b2182b", 0 "#f7f7f7", 1 "#2166ac")
set cbrange [-m:m]
set cbtics ("1x" 0)
do for [e = step:m:step] {
  set cbtics add (sprintf("%gx", 2**e) e, sprintf("1/%gx", 2**e) -e)
}
set cblabel "speedup over ".baseline." (log scale)"
set xrange [-0.5:nx - 0.5]
set yrange [-0.5:ny - 0.5]
set xlabel "NIC bandwidth"
set ylabel "NIC latency"
set style fill solid 1.0 noborder

do for [t=1:2] {
  if (t == 1) {
    set terminal pngcairo size 440*cols,(400*rows + 40) noenhanced font "sans,9"
  } else {
    set terminal svg size 440*cols,(400*rows + 40) noenhanced font "sans,9"
  }
  set output out("speedup_heatmap", t)
  set multiplot layout rows,cols title (nseeds > 1 \
      ? sprintf("Speedup over %s in time to the target accuracy (mean over %d seeds, paired by seed, as in the table)", baseline, nseeds) \
      : sprintf("Speedup over %s in time to the target accuracy", baseline)) \
      margins 70.0/(440*cols), 1 - 120.0/(440*cols), (rows == 1 ? 0.14 : 0.08), (rows == 1 ? 0.78 : 0.88) \
      spacing 190.0/(440*cols), 0.16
  do for [i=1:n] {
    set title wrap(label(i))
    plot f index (i-1) using 1:2:(0.5):(0.5):3 with boxxyerror lc palette, \
         f index (i-1) using (strcol(3) eq "-" ? $1 : 1/0):2:(0.5):(0.5) with boxxyerror lc rgb "#c8c8c8", \
         f index (i-1) using 1:2:6:xtic(4):ytic(5) with labels
  }
  unset multiplot
}
