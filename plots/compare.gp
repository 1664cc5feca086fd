# compare.gp: the plots of a `bellows compare` folder, from its compare.csv and each run's
# evals.csv and steps.csv. Called by bellows (plots/plots.c) as
#   gnuplot -e "dir='DIR'; n=2; run1='1-sync'; run2='2-static...'; label1='sync';
#               label2='static:level=1'; target=0.85; has_breakdown=1" compare.gp
# Writes, as PNG and SVG: the curves of curves.gp (accuracy_vs_time with the target marked,
# bytes_vs_time), accuracy_vs_bytes (rank 0's bytes, or on islands the WAN's: common.gp), time_breakdown (compute / compression / communication /
# waiting per policy up to the target, from time_breakdown.csv; without it, compare.csv's whole
# runs), speedup_band (compare --cost-band only: each policy's speedup against the first, its
# seeds' 95% interval dark and its band over seeds and costs wide and light, as error bars; plots.c
# passes compare.csv's columns: spcol, cilo, cihi, bandlo, bandhi) and schedule (each step's mean compression level, and the averaging period and the
# global batch where a run changes them, every policy in its own colour and dash, wider lines
# first so that equal schedules stay visible, the panels aligned, the key beside them).
load scriptdir."/curves.gp"   # also defines ev(i), st(i), label(i), lwidth(i), dtype(i) and the key
# the schedule's panels: the level always, the averaging period if a run is periodic (a
# gradient policy's period is 0), the global batch if a run changes it; smax: the last step
smax = 0
periodic = 0
batches = 0
do for [i=1:n] {
  stats st(i) every ::1 using 1:15 nooutput
  if (STATS_max_x > smax) { smax = STATS_max_x }
  if (STATS_max_y > 0) { periodic = 1 }
  stats st(i) every ::1 using 3 nooutput
  if (STATS_max > STATS_min) { batches = 1 }
}
panels = 1 + periodic + batches
# the time breakdown to the target (time_breakdown.csv, written by compare: plots.c says
# whether it is there), else the whole run
tbf = dir."/time_breakdown.csv"
tb = exists("has_breakdown") ? has_breakdown : 0
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 1100,560 noenhanced font "sans,10" } \
  else { set terminal svg size 1100,560 noenhanced font "sans,10" }

  set output out("accuracy_vs_bytes", t)
  set title acct(wan ? "Test accuracy against WAN bytes (all ranks)" : "Test accuracy against bytes sent (rank 0)")
  set xlabel bwho." (MB)"
  set ylabel "test accuracy"
  set logscale x
  plot for [i=1:n] ev(i) every ::2 using (column(ebcol(i))/1e6):6 with linespoints lc i dt dtype(i) pt i pointsize 0.6 lw lwidth(i) title label(i)
  unset logscale x

  set output out("time_breakdown", t)
  set style data histograms
  set style histogram rowstacked
  set style fill solid 0.8 border -1
  set boxwidth 0.6
  set ylabel "simulated time (s)"
  unset xlabel
  set xtics rotate by -20
  if (tb) {
    set title target > 0 \
      ? sprintf("Where the simulated time went up to test accuracy %.3f, the table's tta_s (rank 0, mean over seeds)", target) \
      : "Where the simulated time went (rank 0, mean over seeds)"
    plot tbf every ::1 using 4:xtic(strcol(1).(target > 0 && $2 < $3 ? " (not reached: whole run)" : "")) title "compute", \
         "" every ::1 using 5 title "compression", \
         "" every ::1 using 6 title "communication", \
         "" every ::1 using 7 title "waiting"
  } else {
    set title "Where the simulated time went over the whole run (mean over workers and seeds)"
    plot dir."/compare.csv" every ::1 using 11:xtic(1) title "compute", \
         "" every ::1 using 12 title "compression", \
         "" every ::1 using 13 title "communication", \
         "" every ::1 using 14 title "waiting"
  }
  unset xtics
  set xtics
  set style data lines

  if (exists("bandlo")) {
    set output out("speedup_band", t)
    set title "Speedup against the first policy, 95% intervals over the seeds (dark) and over seeds and costs (light)"
    set ylabel "speedup (x)"
    set xrange [0.5:n - 0.5]
    set xtics rotate by -20
    set offsets 0, 0, graph 0.1, graph 0.1
    plot dir."/compare.csv" every ::2 using ($0 + 1):spcol:bandlo:bandhi with yerrorbars lc rgb "#9db8e0" lw 9 pt 0 title "seeds and costs", \
         "" every ::2 using ($0 + 1):spcol:cilo:cihi:xtic(1) with yerrorbars lc rgb "black" lw 2 pt 7 ps 0.8 title "seeds", \
         1 with lines dt 2 lc rgb "gray" title "1x: as fast as the first"
    set offsets 0, 0, 0, 0
    set autoscale x
    unset xtics
    set xtics
  }

  set output out("schedule", t)
  set offsets 0, 0, graph 0.12, graph 0.12   # keep flat lines off the frame
  # every panel over the same steps and between the same margins (the key beside the first), so
  # that a step is at the same x in each
  set lmargin at screen 0.08
  set rmargin at screen 0.78
  set xrange [0:smax]
  set multiplot layout panels,1 title "The schedule each policy chose"
  unset title
  set xlabel panels == 1 ? "step" : ""
  set ylabel "mean level (0: dense)"
  plot for [i=1:n] st(i) every ::1 using 1:14 with steps lc i dt dtype(i) lw lwidth(i) title label(i)
  if (periodic) {
    set xlabel batches ? "" : "step"
    set ylabel "averaging period"
    plot for [i=1:n] st(i) every ::1 using 1:15 with steps lc i dt dtype(i) lw lwidth(i) notitle
  }
  if (batches) {
    set xlabel "step"
    set ylabel "global batch"
    plot for [i=1:n] st(i) every ::1 using 1:3 with steps lc i dt dtype(i) lw lwidth(i) notitle
  }
  unset multiplot
  set autoscale x
  set lmargin -1
  set rmargin -1
  set offsets 0, 0, 0, 0
}
