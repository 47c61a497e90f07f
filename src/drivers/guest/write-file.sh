# Writes stdin to the file $1 (relative paths from the home), its folders made first; $2 "append"
# appends; $3, when not empty, is an octal mode (checked by the API) set afterwards.
mkdir -p "$(dirname "$1")" || exit
if [ "$2" = append ]; then cat >> "$1"; else cat > "$1"; fi || exit
if [ -n "$3" ]; then chmod "$3" "$1"; fi
