import { useEffect, useMemo, useState } from "react";

/** One page of ``items`` at a time, back on page 1 when the items change. */
export function usePagination<T>(items: T[], pageSize = 10) {
  const [page, setPage] = useState(1);
  const pages = Math.max(1, Math.ceil(items.length / pageSize));

  useEffect(() => {
    setPage(1);
  }, [items]);

  const visible = useMemo(
    () => items.slice((page - 1) * pageSize, page * pageSize),
    [items, page, pageSize],
  );
  const next = () => setPage((current) => Math.min(pages, current + 1));
  const previous = () => setPage((current) => Math.max(1, current - 1));
  return { page, pages, visible, next, previous };
}
