# curves.gp: accuracy against simulated time (the target marked, and a panel zoomed on the
# region around it: accuracy from target - 0.1, time from the first run to reach it to the last
# to reach the target) and cumulative bytes against simulated time on a log scale (compressed
# policies send hundreds of times fewer bytes; rank 0's, or on islands the WAN's: common.gp),
# one line per run, from the runs' evals.csv and steps.csv. Loaded by compare.gp, and called by bellows for each point of a sweep
# (plots/plots.c) as
#   gnuplot -e "dir='DIR'; n=2; run1='1-sync'; run2='2-...'; label1='sync'; ...; target=0.85;
#               scenario='bandwidth=1Gbps latency=1us'" curves.gp
# (scenario: the sweep point's flags, put in every title; empty for a compare).
# Every run has its own colour, dash and point type, wider lines first so that a run drawn
# over another does not hide it (lwidth, dtype), and the key sits outside the data.
# Writes DIR/accuracy_vs_time and DIR/bytes_vs_time, PNG and SVG.
load scriptdir."/common.gp"
run(i) = value(sprintf("run%d", i))
label(i) = value(sprintf("label%d", i))
ev(i) = dir."/".run(i)."/evals.csv"
st(i) = dir."/".run(i)."/steps.csv"
# Equal curves stay visible: each run is drawn over the one before it at least 1 px narrower
# (a border of the earlier one's colour shows on both sides), from 5.2 px down to 1.2 px
# (more than five runs: 1 px apart), and in dashes or solid, never dotted (a dotted line
# under another vanishes).
lstep = n > 1 ? (4.0 / (n - 1) > 1 ? 4.0 / (n - 1) : 1) : 0
lwidth(i) = 1.2 + lstep * (n - i)
dtype(i) = int(word("1 2 4 5", (i - 1) % 4 + 1))
# the best accuracy of any run, for the zoomed panel: from target - 0.1 to just above it
amax = 0
do for [i=1:n] {
  stats ev(i) every ::1 using 6 nooutput
  if (STATS_records > 0 && STATS_max > amax) { amax = STATS_max }
}
zoom = target > 0 && amax > target - 0.1
zlo = target - 0.1
zhi = (amax > target ? amax : target) + 0.02
# the zoomed panel's time: from the first run to reach zlo to the last to reach the target (a
# run that never does: to its end), with a margin
xlo = 1e300
xhi = 0
bmax = 0
do for [i=1:n] {
  if (zoom) {
    stats ev(i) every ::1 using ($6 >= zlo ? $1 : 1e300) nooutput
    if (STATS_min < xlo) { xlo = STATS_min }
    stats ev(i) every ::1 using ($6 >= target ? $1 : 1e300) nooutput
    hit = STATS_min
    stats ev(i) every ::1 using 1 nooutput
    if (hit > STATS_max) { hit = STATS_max }
    if (hit > xhi) { xhi = hit }
  }
  stats st(i) every ::1 using (column(sbcol(i))) nooutput
  if (STATS_max > bmax) { bmax = STATS_max }
}
zoomx = zoom && xhi > xlo
xpad = zoomx ? 0.05 * (xhi - xlo) : 0
xfrom = xlo - xpad < 0 ? 0 : xlo - xpad
xto = xhi + xpad
sc = exists("scenario") ? scenario : ""
ttl(s) = sc eq "" ? s : s." (".sc.")"
# a replay's accuracy is its trace's, the same curve under every policy: said on the figure
an = exists("accnote") ? accnote : ""
acct(s) = an eq "" ? s : s." [".an."]"
set key outside right top vertical Left reverse
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 1100,(zoom ? 780 : 560) noenhanced font "sans,10" } \
  else { set terminal svg size 1100,(zoom ? 780 : 560) noenhanced font "sans,10" }

  set output out("accuracy_vs_time", t)
  if (target > 0) { set arrow 1 from graph 0, first target to graph 1, first target nohead dt 2 lw 1.5 lc rgb "#333333" front
                    set label 1 sprintf("target %.3f", target) at graph 0.01, first target offset 0,0.6 front }
  if (zoom) { set multiplot layout 2,1 title acct(ttl("Test accuracy against simulated time")) }
  set title zoom ? "whole run" : acct(ttl("Test accuracy against simulated time"))
  set xlabel "simulated time (s)"
  set ylabel "test accuracy"
  plot for [i=1:n] ev(i) every ::1 using 1:6 with linespoints lc i dt dtype(i) pt i pointsize 0.6 lw lwidth(i) title label(i)
  if (zoom) {
    set title zoomx ? sprintf("zoomed: accuracy %.2f to %.2f, %.4g s to %.4g s", zlo, zhi, xfrom, xto) \
                    : sprintf("zoomed: accuracy %.2f to %.2f", zlo, zhi)
    set yrange [zlo:zhi]
    if (zoomx) { set xrange [xfrom : xto] }
    plot for [i=1:n] ev(i) every ::1 using 1:6 with linespoints lc i dt dtype(i) pt i pointsize 0.6 lw lwidth(i) title label(i)
    set autoscale y
    set autoscale x
    unset multiplot
  }
  unset arrow 1
  unset label 1

  if (t == 1) { set terminal pngcairo size 1100,560 noenhanced font "sans,10" } \
  else { set terminal svg size 1100,560 noenhanced font "sans,10" }
  set output out("bytes_vs_time", t)
  set title ttl("Cumulative ".bwho." against simulated time")
  set xlabel "simulated time (s)"
  if (bmax > 0) { set logscale y; set ylabel bwho." (MB, log scale)" } \
  else { set ylabel bwho." (MB)" }
  plot for [i=1:n] st(i) every ::1 using 6:(column(sbcol(i)) > 0 || bmax <= 0 ? column(sbcol(i))/1e6 : NaN) with lines lc i dt dtype(i) lw lwidth(i) title label(i)
  unset logscale y
}
