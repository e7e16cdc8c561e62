#!/bin/sh
# add.sh A B: print A + B
echo $(($1 - $2))
