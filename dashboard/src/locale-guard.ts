/**
 * Keeps `navigator.language` a tag Intl accepts. A browser started in the
 * POSIX locale (`LANG=C`, as headless Chromium on a server often is) reports
 * `en-US@posix`, which `Intl.NumberFormat` refuses with a RangeError; uPlot
 * builds a formatter from it when its module loads, so the whole page would
 * fail before drawing. Imported first by main.tsx, so it runs before uPlot.
 */
function acceptedByIntl(tag: string): boolean {
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
}

if (typeof navigator !== "undefined" && !acceptedByIntl(navigator.language)) {
  // The tag without its POSIX modifier when that is valid, else the page's own language.
  const base = navigator.language.split("@")[0] ?? "";
  const language = acceptedByIntl(base) ? base : "en-GB";
  Object.defineProperty(navigator, "language", { value: language, configurable: true });
}
