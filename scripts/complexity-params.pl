#!/usr/bin/perl
# The parameters of each function pmccabe measured (its output on stdin):
# prints "N file(line): function".  A function's parameter list is read
# from its name's "(" (at or after the line pmccabe gives) to the matching
# ")": top-level commas plus one, 0 for "()"; "(void)" counts 1, which no
# limit cares about.
use strict;
use warnings;

my %text;
while (my $rec = <STDIN>) {
    chomp $rec;
    my @f = split /\t/, $rec;
    next unless @f >= 6;
    my ($start, $where) = ($f[3], $f[5]);
    my ($file, $name) = $where =~ /^(.*)\(\d+\): (\S+)$/ or next;
    $text{$file} //= do {
        open my $fh, '<', $file or die "complexity-params: $file: $!\n";
        [<$fh>];
    };
    my $lines = $text{$file};
    my $last = $start + 40 < @$lines ? $start + 40 : $#$lines;
    my $src = join '', @{$lines}[$start - 1 .. $last];
    $src =~ /\b\Q$name\E\s*\(/g or next;
    my ($depth, $commas, $any) = (1, 0, 0);
    while ($depth > 0 && $src =~ /\G(.)/gcs) {
        my $c = $1;
        if ($c eq '(') { $depth++ }
        elsif ($c eq ')') { $depth-- }
        elsif ($c eq ',' && $depth == 1) { $commas++ }
        if ($c !~ /\s/ && $depth >= 1) { $any = 1 }
    }
    printf "%d %s\n", $any ? $commas + 1 : 0, $where;
}
