# compare.gp: the plots of a `bellows compare` folder, from its compare.csv and each run's
# evals.csv. Called by bellows (plots/plots.c) as
#   gnuplot -e "dir='DIR'; runs='1-sync 2-static...'; labels='sync static:level=1 ...'" compare.gp
# Writes DIR/accuracy_vs_time.png, DIR/accuracy_vs_bytes.png and DIR/time_breakdown.png.
set datafile separator ","
set terminal pngcairo size 900,560 noenhanced font "sans,10"
set key bottom right
set grid
n = words(runs)

set output dir."/accuracy_vs_time.png"
set title "Test accuracy against simulated time"
set xlabel "simulated time (s)"
set ylabel "test accuracy"
plot for [i=1:n] dir."/".word(runs,i)."/evals.csv" every ::1 using 1:6 \
     with linespoints pointsize 0.6 title word(labels,i)

set output dir."/accuracy_vs_bytes.png"
set title "Test accuracy against bytes sent per worker"
set xlabel "MB sent per worker"
plot for [i=1:n] dir."/".word(runs,i)."/evals.csv" every ::1 using ($7/1e6):6 \
     with linespoints pointsize 0.6 title word(labels,i)

set output dir."/time_breakdown.png"
set title "Where the simulated time went (mean over workers)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set key top right
set ylabel "simulated seconds"
unset xlabel
set xtics rotate by -20
plot dir."/compare.csv" every ::1 using 11:xtic(1) title "compute", \
     "" every ::1 using 12 title "communication", \
     "" every ::1 using 13 title "waiting"
