// Where the UI is: the query of the page's URL, so every screen has a link (?task=<id>,
// ?new) that opens in a new tab, is shared, and survives a reload. Navigation pushes history
// entries, so the browser's back button goes back.
import { useSyncExternalStore } from "react";

export type Place = { screen: "tasks" } | { screen: "new" } | { screen: "task"; taskId: string };

const CHANGED = "tiny-harness:navigate";

export function placeOf(search: string): Place {
  const query = new URLSearchParams(search);
  const taskId = query.get("task");
  if (taskId) return { screen: "task", taskId };
  if (query.has("new")) return { screen: "new" };
  return { screen: "tasks" };
}

export function hrefOf(place: Place): string {
  if (place.screen === "task") return `?task=${encodeURIComponent(place.taskId)}`;
  if (place.screen === "new") return "?new";
  return "./";
}

export function navigate(place: Place): void {
  const href = hrefOf(place);
  window.history.pushState(null, "", href);
  window.dispatchEvent(new Event(CHANGED));
}

function subscribe(listener: () => void): () => void {
  window.addEventListener("popstate", listener);
  window.addEventListener(CHANGED, listener);
  return () => {
    window.removeEventListener("popstate", listener);
    window.removeEventListener(CHANGED, listener);
  };
}

export function usePlace(): Place {
  const search = useSyncExternalStore(subscribe, () => window.location.search);
  return placeOf(search);
}

/** A plain left click on a link navigates in the page; any other (a middle click, with ctrl
 * or shift) is left to the browser, so links open in new tabs as links do. */
export function onLinkClick(place: Place) {
  return (event: React.MouseEvent<HTMLAnchorElement>): void => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
      return;
    }
    event.preventDefault();
    navigate(place);
  };
}
