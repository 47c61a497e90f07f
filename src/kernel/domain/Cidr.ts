/**
 * Address ranges (`SVC_TRUSTED_PROXIES`): a CIDR list parsed once into Node's BlockList, which
 * answers whether an address is in one of them. An IPv4 address seen as IPv6 (`::ffff:10.0.0.1`,
 * as a dual-stack listener reports it) is checked as the IPv4 address it is.
 */
import * as NodeNet from "node:net"

export interface Cidr {
  readonly address: string
  readonly prefix: number
  readonly family: "ipv4" | "ipv6"
}

/** `10.0.0.0/8`, `::1/128`, or a bare address (all of its bits); undefined when malformed. */
export const parseCidr = (text: string): Cidr | undefined => {
  const [address = "", prefixText, ...rest] = text.trim().split("/")
  if (rest.length > 0) return undefined
  const version = NodeNet.isIP(address)
  if (version === 0) return undefined
  const family = version === 4 ? "ipv4" : "ipv6"
  const bits = version === 4 ? 32 : 128
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined
  const prefix = prefixText === undefined ? bits : Number(prefixText)
  return prefix <= bits ? { address, prefix, family } : undefined
}

/** The plain form of an address: an IPv4-mapped IPv6 address as IPv4, brackets and zone off. */
export const plainAddress = (address: string): string => {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "")
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare)
  return mapped === null ? bare : mapped[1]!
}

/** Whether an address is in one of the ranges; a malformed address is in none. */
export const cidrMatcher = (cidrs: ReadonlyArray<string>) => {
  const list = new NodeNet.BlockList()
  for (const text of cidrs) {
    const cidr = parseCidr(text)
    if (cidr !== undefined) list.addSubnet(cidr.address, cidr.prefix, cidr.family)
  }
  return (address: string | undefined): boolean => {
    if (cidrs.length === 0 || address === undefined) return false
    const plain = plainAddress(address)
    const version = NodeNet.isIP(plain)
    return version !== 0 && list.check(plain, version === 4 ? "ipv4" : "ipv6")
  }
}
