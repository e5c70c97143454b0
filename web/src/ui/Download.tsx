// A download link for bytes the page holds (an artifact, one of its files): an object URL made
// for as long as the link is shown, with the file's name and media type. The page's
// Content-Security-Policy governs what it loads, not what a link saves, so no data: URL of a
// megabyte need sit in the document.
import { useEffect, useState } from "react";
import { size } from "../attachments";
import { literal } from "../literal";
import type { Download } from "../parts";

export function DownloadLink({ download, what }: { download: Download; what: string }) {
  const url = useObjectUrl(download);
  return (
    <a className="download" href={url ?? undefined} download={download.filename}>
      Download {literal(what, false)}{" "}
      <span className="muted">
        ({download.filename}, {size(download.bytes.length)})
      </span>
    </a>
  );
}

function useObjectUrl(download: Download): string | null {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const blob = new Blob([new Uint8Array(download.bytes)], { type: download.mediaType });
    const made = URL.createObjectURL(blob);
    setUrl(made);
    return () => URL.revokeObjectURL(made);
  }, [download]);
  return url;
}
