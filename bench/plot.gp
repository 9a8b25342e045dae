# SPDX-License-Identifier: GPL-2.0
# The chart of bench/REPORT.md, from the .dat files bench/analyze.py writes.
#   gnuplot -e "datadir='DIR'; outfile='bench.png'; maintitle='...'" plot.gp

set terminal pngcairo size 1600,1100 font ",11" noenhanced
set output outfile
set multiplot layout 2,2 title maintitle font ",13"

set style data histogram
set style histogram errorbars gap 1 lw 1.5
set style fill solid 0.6 border -1
set grid ytics
set key below horizontal
set datafile missing "NaN"
set bars 1.5

# 1. pinned pipe: every configuration and write scheme, ratio to N
set title "1+2. perf bench sched pipe pinned to CPU 0: time relative to N (no module)"
set ylabel "median / median(N)   (lower is better)"
set xlabel "E: loaded, nothing tracked   T: benchmark tracked   A: track_all=1   B: bpftrace\na: seqcount pair   b: xchg   c: plain store (= A)" noenhanced
set yrange [0.8:*]
plot datadir.'/pinned.dat' using 2:3:4:xtic(1) title "ratio of medians, 95% bootstrap CI", \
     '' using 5:6:7 title "paired within rounds, 95% CI", \
     1 with lines lc rgb "black" dt 2 notitle

# 2. the benchmarks that need both vCPUs
set title "1. Both vCPUs busy: relative to N, log scale (dominated by host contention)"
set ylabel "median / median(N)"
set xlabel "E, T, A, B as left"
set logscale y
set yrange [0.01:20]
plot datadir.'/multi.dat' using 2:3:4:xtic(1) title "pipe, CPUs 0,1", \
     '' using 5:6:7 title "hackbench", \
     1 with lines lc rgb "black" dt 2 notitle
unset logscale y

# 3. probe microbenchmark
set title "3. Probe cost at load (TS_BENCH), ns per call; bars: min-max over loads"
set ylabel "ns per call (incl. loop)"
set xlabel "write scheme of the build"
set yrange [0:*]
plot datadir.'/probe.dat' using 2:3:4:xtic(1) title "empty loop", \
     '' using 5:6:7 title "clock read (tsc)", \
     '' using 8:9:10 title "probe, 2 words tracked", \
     '' using 11:12:13 title "probe, untracked"

# 4. readers
set title "4. Readers in the guest: cost relative to getppid() in the same round (log scale)"
set ylabel "ns per call / ns per getppid"
set xlabel ""
set logscale y
set yrange [*:*]
set xtics rotate by -25
set style histogram clustered gap 1
plot datadir.'/readers.dat' using 2:xtic(1) title "per call", \
     '' using 3 title "per tid (samples only)"
unset logscale y
unset multiplot
