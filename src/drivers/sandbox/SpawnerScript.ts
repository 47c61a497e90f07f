/**
 * The spawner's Perl program (spawner.pl beside this file: its requests and answers are described
 * at its top), for `perl -e`.
 */
import { perlSource } from "../PerlSource.js"

export const spawnerScript = perlSource("sandbox/spawner.pl")
