import { describe, expect, it } from "vitest";
import { describeUserAgent } from "../../../../src/domain/events/user-agent.js";
import { USER_AGENTS as UA } from "../../../helpers/fixtures.js";

describe("user agent", () => {
  it("names browser, OS and device type", () => {
    expect(describeUserAgent(UA.chromeWindows)).toEqual({
      browser: "Chrome",
      os: "Windows",
      device: "desktop",
    });
    expect(describeUserAgent(UA.safariIphone)).toEqual({
      browser: "Mobile Safari",
      os: "iOS",
      device: "mobile",
    });
    expect(describeUserAgent(UA.safariIpad).device).toBe("tablet");
    expect(describeUserAgent(UA.firefoxLinux)).toEqual({
      browser: "Firefox",
      os: "Linux",
      device: "desktop",
    });
    expect(describeUserAgent(UA.edge).browser).toBe("Edge");
    expect(describeUserAgent(UA.chromeAndroid)).toEqual({
      browser: "Chrome",
      os: "Android",
      device: "mobile",
    });
  });

  it("says nothing about an unknown user agent", () => {
    expect(describeUserAgent("SomethingElse")).toEqual({
      browser: undefined,
      os: undefined,
      device: undefined,
    });
  });
});
