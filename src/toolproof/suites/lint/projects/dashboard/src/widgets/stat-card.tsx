import { formatCurrency, formatNumber } from "../format";
import { TrendBadge } from "./trend-badge";

export interface StatCardProps {
  label: string;
  value: number;
  change?: number;
  money?: boolean;
}

export function StatCard({ label, value, change, money = false }: StatCardProps) {
  const shown = money ? formatCurrency(value) : formatNumber(value, { compact: true });
  return (
    <div className="rounded-lg border bg-white p-4 shadow-sm">
      <p className="text-sm text-gray-500">{label}</p>
      <div className="mt-1 flex items-baseline gap-2">
        <span className="text-2xl font-semibold">{shown}</span>
        {change === undefined ? null : <TrendBadge change={change} />}
      </div>
    </div>
  );
}
