// Nexmark q14's `count_char(s, c)` for Flink, as nexmark-flink declares it
// (`CREATE FUNCTION count_char AS '…CountChar'`): the number of times the character `c` occurs
// in `s`. anduin's q14 declares the same function in JavaScript. flink_nexmark_all.py compiles
// this file into a jar on first use.
import org.apache.flink.table.functions.ScalarFunction;

public class CountChar extends ScalarFunction {
    public long eval(String s, String c) {
        if (s == null || c == null || c.isEmpty()) {
            return 0;
        }
        char ch = c.charAt(0);
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == ch) {
                n++;
            }
        }
        return n;
    }
}
