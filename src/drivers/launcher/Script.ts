/**
 * The launcher's Perl program (launcher.pl beside this file; the frames it speaks are described
 * at its top). It travels on a command line (`perl -e`, inside the machine, where no file of svc's
 * is visible), so it goes without its comments and indentation.
 */
import { embeddedText } from "../Embedded.js"

export const launcherScript = embeddedText("launcher/launcher.pl").split("\n").map((line) => line.trim()).filter((
  line
) => line !== "" && !line.startsWith("#")).join("\n")
