/**
 * The `Origin` check of the public collect endpoint: a browser names the page
 * that sends the request, and that page must be on one of the site's hosts,
 * exactly like the event's `u`. A site id alone is public (it is in every
 * page's HTML), so this stops other pages from writing to the site from
 * visitors' browsers. Non-browser clients send no Origin and are held to `u`.
 */
import { errors } from "../errors.js";
import { hostOf } from "./url-parts.js";

/** Throws 400 `invalid_input` unless `origin` is an http(s) origin on one of `hostnames`. */
export function checkOrigin(origin: string, hostnames: readonly string[]): void {
  let host: string | undefined;
  try {
    const url = new URL(origin);
    if (url.protocol === "http:" || url.protocol === "https:") host = hostOf(url);
  } catch {
    host = undefined;
  }
  const hosts = new Set(hostnames.map((h) => h.toLowerCase().replace(/\.$/, "")));
  if (host === undefined || !hosts.has(host)) {
    throw errors.invalid(
      host === undefined
        ? "Origin must be the http or https origin of a page on one of the site's hostnames"
        : `Origin host ${host} is not one of the site's hostnames`,
    );
  }
}
