import { forwardRef, useId } from "react";
import type { InputHTMLAttributes } from "react";

import { cn, focusRing } from "../lib/utils";

export interface InputProps extends InputHTMLAttributes<HTMLInputElement> {
  label?: string;
  error?: string;
}

export const Input = forwardRef<HTMLInputElement, InputProps>(function Input(
  { className, label, error, id, ...props },
  ref,
) {
  const generated = useId();
  const inputId = id ?? generated;
  const invalid = error !== undefined && error !== "";
  return (
    <div className="grid gap-1.5">
      {label ? (
        <label htmlFor={inputId} className="text-sm font-medium">
          {label}
        </label>
      ) : null}
      <input
        ref={ref}
        id={inputId}
        aria-invalid={invalid}
        aria-describedby={invalid ? `${inputId}-error` : undefined}
        className={cn(
          "h-10 w-full rounded-md border border-input bg-background px-3 text-sm",
          focusRing,
          invalid && "border-destructive",
          className,
        )}
        {...props}
      />
      {invalid ? (
        <p id={`${inputId}-error`} className="text-sm text-destructive">
          {error}
        </p>
      ) : null}
    </div>
  );
});
