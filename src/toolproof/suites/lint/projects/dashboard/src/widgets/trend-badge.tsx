import { clsx } from "clsx";

import { formatPercent } from "../format";

export interface TrendBadgeProps {
  change: number;
}

export function TrendBadge({ change }: TrendBadgeProps) {
  const direction = change > 0 ? "up" : change < 0 ? "down" : "flat";
  return (
    <span
      className={clsx("rounded-full px-2 py-0.5 text-xs font-medium", {
        "bg-green-100 text-green-800": direction === "up",
        "bg-red-100 text-red-800": direction === "down",
        "bg-gray-100 text-gray-700": direction === "flat",
      })}
    >
      {formatPercent(change)}
    </span>
  );
}
