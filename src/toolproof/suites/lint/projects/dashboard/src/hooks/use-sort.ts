import { useMemo, useState } from "react";

export type SortDirection = "asc" | "desc";

export interface SortState<T> {
  key: keyof T;
  direction: SortDirection;
}

/** Rows sorted by one column; sorting by the same column again flips the direction. */
export function useSort<T>(rows: T[], initial: SortState<T>) {
  const [sort, setSort] = useState<SortState<T>>(initial);
  const sorted = useMemo(() => {
    const factor = sort.direction === "asc" ? 1 : -1;
    return [...rows].sort((a, b) => {
      const left = a[sort.key];
      const right = b[sort.key];
      if (left === right) {
        return 0;
      }
      return left > right ? factor : -factor;
    });
  }, [rows, sort]);
  const sortBy = (key: keyof T) =>
    setSort((current) => ({
      key,
      direction: current.key === key && current.direction === "asc" ? "desc" : "asc",
    }));
  return { sorted, sort, sortBy };
}
