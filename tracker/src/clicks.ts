/** Opt-in click events: outbound links, file downloads and tagged elements. */

/** File extensions counted as downloads when `data-downloads` lists none. */
const DOWNLOADS =
  "pdf,xlsx,docx,txt,rtf,csv,exe,key,pps,ppt,pptx,7z,pkg,rar,gz,zip,avi,mov,mp4,mpeg,wmv,midi,mp3,wav,wma,dmg,iso,msi";

/**
 * The event a click means, as `[name, props]`, or undefined. `downloads` is
 * the `data-downloads` value ("" for the default list; undefined: off).
 * Tagged elements: `data-ingest-event="Name"` with `data-ingest-prop-<key>`
 * attributes as properties, on the element or an ancestor.
 */
export function clickEvent(
  event: MouseEvent,
  pageHost: string,
  options: { outbound: boolean; downloads: string | undefined },
): [string, Record<string, string>] | undefined {
  if (event.type === "auxclick" && event.button !== 1) return undefined;
  const target = event.target as Element | null;
  if (!target?.closest) return undefined;
  const tagged = target.closest("[data-ingest-event]");
  if (tagged) {
    const props: Record<string, string> = {};
    for (const a of Array.from(tagged.attributes)) {
      if (a.name.indexOf("data-ingest-prop-") === 0) props[a.name.slice(17)] = a.value;
    }
    return [tagged.getAttribute("data-ingest-event") as string, props];
  }
  const link = target.closest("a[href]") as HTMLAnchorElement | null;
  if (!link || !/^https?:$/.test(link.protocol)) return undefined;
  const url = link.href.split("?")[0] as string;
  if (options.downloads !== undefined) {
    const ext = (/\.([\w-]+)$/.exec(link.pathname) || [])[1];
    if (ext && (options.downloads || DOWNLOADS).split(",").indexOf(ext.toLowerCase()) >= 0) {
      return ["File Download", { url }];
    }
  }
  if (options.outbound && link.host !== pageHost) return ["Outbound Link Click", { url }];
  return undefined;
}
