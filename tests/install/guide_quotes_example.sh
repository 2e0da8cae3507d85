#!/usr/bin/env bash
# install_guide_in_sync: docs/guide.md (section 9) quotes examples/out-of-tree verbatim — its
# CMakeLists.txt from find_package on, and my_tidemark.cpp from the first #include on.
#   guide_quotes_example.sh SOURCE_DIR
set -euo pipefail
source=$1
guide=$(<"$source/docs/guide.md")
check() {  # FILE SED_ADDRESS: the part of FILE from the first line matching the address
  local quote
  quote=$(sed -n "$2,\$p" "$source/examples/out-of-tree/$1")
  [[ -n $quote ]] || { echo "nothing matches $2 in $1" >&2; exit 1; }
  [[ $guide == *"$quote"* ]] || { echo "docs/guide.md does not quote examples/out-of-tree/$1 exactly:" >&2; echo "$quote" >&2; exit 1; }
}
check CMakeLists.txt '/^find_package/'
check my_tidemark.cpp '/^#include/'
echo "docs/guide.md quotes examples/out-of-tree"
