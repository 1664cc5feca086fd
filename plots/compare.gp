# compare.gp: the plots of a `bellows compare` folder, from its compare.csv and each run's
# evals.csv and steps.csv. Called by bellows (plots/plots.c) as
#   gnuplot -e "dir='DIR'; n=2; run1='1-sync'; run2='2-static...'; label1='sync';
#               label2='static:level=1'; target=0.85" compare.gp
# Writes, as PNG and SVG: the curves of curves.gp (accuracy_vs_time with the target marked,
# bytes_vs_time), accuracy_vs_bytes, time_breakdown (compute / communication / waiting per
# policy) and schedule (each step's mean compression level, averaging period and global batch,
# every policy in its own colour and dash, wider lines first so that equal schedules stay
# visible, the key beside the panels).
load scriptdir."/curves.gp"   # also defines ev(i), st(i), label(i), lwidth(i) and the key
do for [t=1:2] {
  if (t == 1) { set terminal pngcairo size 1100,560 noenhanced font "sans,10" } \
  else { set terminal svg size 1100,560 noenhanced font "sans,10" }

  set output out("accuracy_vs_bytes", t)
  set title acct("Test accuracy against bytes sent (rank 0)")
  set xlabel "bytes sent by rank 0 (MB)"
  set ylabel "test accuracy"
  set logscale x
  plot for [i=1:n] ev(i) every ::2 using ($7/1e6):6 with linespoints lc i dt i pt i pointsize 0.6 lw lwidth(i) title label(i)
  unset logscale x

  set output out("time_breakdown", t)
  set title "Where the simulated time went (mean over workers)"
  set style data histograms
  set style histogram rowstacked
  set style fill solid 0.8 border -1
  set boxwidth 0.6
  set ylabel "simulated time (s)"
  unset xlabel
  set xtics rotate by -20
  plot dir."/compare.csv" every ::1 using 11:xtic(1) title "compute", \
       "" every ::1 using 12 title "compression", \
       "" every ::1 using 13 title "communication", \
       "" every ::1 using 14 title "waiting"
  unset xtics
  set xtics
  set style data lines

  set output out("schedule", t)
  set offsets 0, 0, graph 0.12, graph 0.12   # keep flat lines off the frame
  set multiplot layout 3,1 title "The schedule each policy chose"
  unset title
  set xlabel ""
  set ylabel "mean level (0: dense)"
  plot for [i=1:n] st(i) every ::1 using 1:14 with steps lc i dt i lw lwidth(i) title label(i)
  set ylabel "averaging period"
  plot for [i=1:n] st(i) every ::1 using 1:15 with steps lc i dt i lw lwidth(i) notitle
  set xlabel "step"
  set ylabel "global batch"
  plot for [i=1:n] st(i) every ::1 using 1:3 with steps lc i dt i lw lwidth(i) notitle
  unset multiplot
  set offsets 0, 0, 0, 0
}
