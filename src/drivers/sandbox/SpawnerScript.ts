/**
 * The spawner's Perl program (spawner.pl beside this file: its requests and answers are described
 * at its top), for `perl -e`.
 */
import { embeddedText } from "../Embedded.js"

export const spawnerScript = embeddedText("sandbox/spawner.pl")
