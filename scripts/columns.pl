#!/usr/bin/perl
# scripts/columns for one entity: DIR TABLE FILE LIST STRUCT (see there).
use strict;
use warnings;

my ($dir, $table, $file, $list, $type) = @ARGV;
my $bad = 0;
# a list of this many of its columns is a row written again (a few, as in
# an UPDATE or a small projection into another struct, are not)
my $ROW = 8;

sub slurp {
    my ($path) = @_;
    open my $fh, '<', $path or die "columns: $path: $!\n";
    local $/;
    return <$fh>;
}

sub offend {
    my ($where, $what) = @_;
    print "columns: $where: $what (the $table columns are written once, in $list)\n";
    $bad = 1;
}

# the list: from "#define LIST(" to the first line without a continuation
my $own = slurp("$dir/$file");
$own =~ s/^(#define\s+\Q$list\E\s*\((?:[^\n]*\\\n)*[^\n]*\n)//m
    or do { print "columns: $dir/$file: no #define $list\n"; exit 1 };
my $def = $1;
my @cols = $def =~ /\b(?:FIRST|NEXT)\(\s*(\w+)\s*,/g;
@cols or do { print "columns: $dir/$file: $list names no column\n"; exit 1 };
my %col = map { $_ => 1 } @cols;

# each SQL statement: adjacent string literals joined
sub statements {
    my ($text) = @_;
    my @out;
    while ($text =~ /((?:"(?:[^"\\\n]|\\.)*"(?:\s|\\\n)*)+)/g) {
        my $run = $1;
        push @out, join '', $run =~ /"((?:[^"\\\n]|\\.)*)"/g;
    }
    return @out;
}

opendir my $dh, $dir or die "columns: $dir: $!\n";
for my $f (sort grep { /\.c$/ } readdir $dh) {
    my $path = "$dir/$f";
    my $text = $f eq $file ? $own : slurp($path);
    while ($text =~ /STORE_FIELD\(\s*struct\s+\Q$type\E\s*,\s*(\w+)/g) {
        offend($path, "STORE_FIELD of $type.$1") if $col{$1};
    }
    # and through a wrapper: #define W(member, ...) STORE_FIELD(struct TYPE, member, ...)
    my @wrappers = $text =~ /#define\s+(\w+)\(\s*(?:\w+\s*,\s*)*\w+\s*\)(?:\s|\\\n)*STORE_FIELD\(\s*struct\s+\Q$type\E\b/g;
    for my $w (@wrappers) {
        while ($text =~ /\b\Q$w\E\(\s*(\w+)\s*,/g) {
            offend($path, "$w($1, ...), a STORE_FIELD of $type.$1") if $col{$1};
        }
    }
    offend($path, "INSERT INTO $table with its columns") if $text =~ /INSERT\s+INTO\s+\Q$table\E\s*\(\s*\w/;
    for my $sql (statements($text)) {
        next unless $f eq $file || $sql =~ /\b\Q$table\E\b/;
        while ($sql =~ /((?:\w+\.)?\w+(?:\s*,\s*(?:\w+\.)?\w+)+)/g) {
            my %seen;
            for my $w (split /\s*,\s*/, $1) {
                $w =~ s/^\w+\.//;
                $seen{$w} = 1 if $col{$w};
            }
            offend($path, "a list of its columns: \"$1\"") if keys %seen >= $ROW;
        }
    }
}
exit $bad;
