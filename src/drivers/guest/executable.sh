# Exits 0 when $1 is an executable file in the machine (an agent CLI installed at boot).
test -x "$1"
