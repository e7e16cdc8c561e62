#!/usr/bin/perl
# The statement-level scan behind scripts/edges (see there): a snprintf
# call whose result is thrown away, that is one at the start of a
# statement (after ; { } : else do, or a closing parenthesis at the
# statement's level: an if's condition, a (void) cast), outside comments
# and strings, needs the marker /* truncation: ok, <why> */ on its line
# or the line above.
use strict;
use warnings;

my $bad = 0;

# The text with comments, strings and character literals blanked (their
# newlines kept), so that offsets and line numbers stay those of the file.
sub blank {
    my ($s) = @_;
    $s =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')}{
        my $m = $1; $m =~ s/[^\n]/ /g; $m
    }gse;
    return $s;
}

# Whether what follows TOKEN begins a statement.
sub starts {
    my ($t) = @_;
    return $t =~ /^[;{}:)]$/ || $t eq 'else' || $t eq 'do';
}

sub marked {
    my ($line) = @_;
    return defined $line && $line =~ m{/\*\s*truncation:\s*ok,\s*\S[^*]*\*/};
}

for my $f (@ARGV) {
    open(my $fh, '<', $f) or do { print STDERR "edges: $f: $!\n"; $bad = 1; next; };
    local $/;
    my $src = <$fh>;
    close $fh;
    my @lines = split /\n/, $src, -1;
    my $code = blank($src);
    my @open;          # for each open parenthesis, the token before it
    my $last = ';';    # the last significant token before the current point
    while ($code =~ /\G(?:(\s+)|([A-Za-z_]\w*)|(.))/gsc) {
        next if defined $1;
        if (defined $2) {
            my $w = $2;
            if ($w eq 'snprintf' && !@open && starts($last)) {
                my $at = pos($code) - length($w);
                my $ln = () = substr($code, 0, $at) =~ /\n/g;
                unless (marked($lines[$ln]) || ($ln > 0 && marked($lines[$ln - 1]))) {
                    (my $t = $lines[$ln]) =~ s/^\s+//;
                    print "$f:" . ($ln + 1) . ": $t\n";
                    $bad = 1;
                }
            }
            $last = $w;
            next;
        }
        my $c = $3;
        if ($c eq '(') {
            push @open, $last;
        } elsif ($c eq ')') {
            # the end of an if's (while's, for's) condition, or of a cast
            # that begins a statement ((void)), begins a statement
            my $before = @open ? pop @open : '';
            if ($before =~ /^(if|while|for|switch)$/ || starts($before)) {
                $last = ')';
                next;
            }
            $last = 'x';
            next;
        } elsif ($c eq '#') {
            # a preprocessor line: skip to its end (with continuations)
            $code =~ /\G(?:[^\n\\]|\\.)*/gsc;
            next;
        }
        $last = $c;
    }
}
if ($bad) {
    print STDERR "edges: snprintf results thrown away: format paths with path_fmt(), check other "
      . "text's length, or mark a harmless cut with /* truncation: ok, <why> */\n";
}
exit $bad;
