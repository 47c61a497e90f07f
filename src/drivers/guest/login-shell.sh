# A terminal's default command: the image's bash as a login shell when it has one, else sh.
if command -v bash >/dev/null 2>&1; then exec bash -l; fi
exec sh -l
