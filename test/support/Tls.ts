/**
 * A certificate authority made by the tests, for the TLS servers they start (OIDC provider, SMTP,
 * webhook receivers). Node can check certificates but not make them, so Debian's `openssl` does
 * (already needed by nothing else; it ships with every Debian and with CI's image): P-256 keys, a
 * self-signed CA valid two days and server certificates it signs for the names and addresses given.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { tempDir } from "./TestServer.js"

export interface ServerCertificate {
  /** PEM texts, as `tls.createServer({ key, cert })` takes them. */
  readonly key: string
  readonly cert: string
  readonly keyFile: string
  readonly certFile: string
}

export interface TestCa {
  /** The CA's certificate file (PEM): what `SVC_EXTRA_CA_CERTS` names. */
  readonly caFile: string
  readonly caPem: string
  /** A server certificate for `hosts` (names and IP addresses), signed by this CA. */
  readonly issue: (...hosts: ReadonlyArray<string>) => ServerCertificate
}

const openssl = (...args: ReadonlyArray<string>) => {
  const done = NodeChild.spawnSync("openssl", args, { encoding: "utf8" })
  if (done.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${done.stderr}`)
}

const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

/** A CA in `dir` (its files are named after `name`). */
export const makeCa = (dir: string, name = "svc test CA"): TestCa => {
  const file = (suffix: string) => NodePath.join(dir, `${name.replace(/\W+/g, "-")}-${suffix}`)
  const caFile = file("ca.pem")
  openssl(
    "req",
    "-x509",
    ...ecKey,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
    "-keyout",
    file("ca.key"),
    "-out",
    caFile
  )
  let issued = 0
  const issue = (...hosts: ReadonlyArray<string>): ServerCertificate => {
    const base = file(`server${++issued}`)
    const names = hosts.map((host) => (/^[\d.]+$|:/.test(host) ? `IP:${host}` : `DNS:${host}`)).join(",")
    NodeFs.writeFileSync(`${base}.cnf`, `subjectAltName=${names}\nextendedKeyUsage=serverAuth\n`)
    openssl("req", ...ecKey, "-subj", `/CN=${hosts[0]}`, "-keyout", `${base}.key`, "-out", `${base}.csr`)
    openssl(
      "x509",
      "-req",
      "-in",
      `${base}.csr`,
      "-CA",
      caFile,
      "-CAkey",
      file("ca.key"),
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      `${base}.cnf`,
      "-out",
      `${base}.pem`
    )
    return {
      key: NodeFs.readFileSync(`${base}.key`, "utf8"),
      cert: NodeFs.readFileSync(`${base}.pem`, "utf8"),
      keyFile: `${base}.key`,
      certFile: `${base}.pem`
    }
  }
  return { caFile, caPem: NodeFs.readFileSync(caFile, "utf8"), issue }
}

/** A CA in a temporary folder removed with the scope. */
export const testCa = (name?: string) => Effect.map(tempDir, (dir) => makeCa(dir, name))
