/**
 * The spawner's Perl program, for `perl -e`: namespaces.pl (the namespace and mount steps, and
 * the isolation probe) then spawner.pl (its requests and answers are described at its top), both
 * beside this file.
 */
import { embeddedText } from "../Embedded.js"

export const spawnerScript = `${embeddedText("sandbox/namespaces.pl")}\n${embeddedText("sandbox/spawner.pl")}`
