// SPDX-License-Identifier: GPL-2.0-or-later
#include "ddpscope/wire/terminate_error.h"

#include <gtest/gtest.h>

namespace ddpscope {
namespace {

TEST(TerminateErrors, KnownTriples) {
  EXPECT_EQ(terminate_error_name(1, 1, 1), "DDP / Tagged Buffer / Base or bounds violation");
  EXPECT_EQ(terminate_error_name(0, 1, 0), "RDMAP / Remote Protection / Invalid STag");
  EXPECT_EQ(terminate_error_name(0, 2, 6), "RDMAP / Remote Operation / Unexpected OpCode");
  EXPECT_EQ(terminate_error_name(0, 2, 7),
            "RDMAP / Remote Operation / Catastrophic, localized to RDMAP stream");
  EXPECT_EQ(terminate_error_name(1, 2, 3),
            "DDP / Untagged Buffer / Invalid MSN - MSN range not valid");
  EXPECT_EQ(terminate_error_name(2, 0, 2), "LLP / MPA / MPA CRC error");
  EXPECT_EQ(terminate_error_name(2, 0, 7), "LLP / MPA / No matching RTR option");
  EXPECT_EQ(terminate_error_name(TerminateError{2, 0, 6}),
            "LLP / MPA / Insufficient IRD resources");
  EXPECT_EQ(terminate_error_name(1, 0, 0), "DDP / Local Catastrophic / Local catastrophic error");
}

TEST(TerminateErrors, UnknownPartsAsHex) {
  EXPECT_EQ(terminate_error_name(1, 1, 0x07), "DDP / Tagged Buffer / 0x07");
  EXPECT_EQ(terminate_error_name(0, 0, 0xFF), "RDMAP / Local Catastrophic / 0xFF");
  EXPECT_EQ(terminate_error_name(0, 5, 0x01), "RDMAP / 0x5 / 0x01");
  EXPECT_EQ(terminate_error_name(0xF, 0xE, 0xAB), "0xF / 0xE / 0xAB");
  EXPECT_EQ(terminate_error_name(2, 3, 1), "LLP / 0x3 / 0x01");
}

TEST(TerminateErrors, PartNames) {
  EXPECT_EQ(term_layer_name(0), "RDMAP");
  EXPECT_EQ(term_layer_name(1), "DDP");
  EXPECT_EQ(term_layer_name(2), "LLP");
  EXPECT_TRUE(term_layer_name(3).empty());
  EXPECT_EQ(term_etype_name(1, ddp_etype::untagged_buffer), "Untagged Buffer");
  EXPECT_EQ(term_etype_name(0, rdmap_etype::remote_operation), "Remote Operation");
  EXPECT_EQ(term_code_name(0, rdmap_etype::remote_protection, rdmap_code::stag_cannot_invalidate),
            "STag cannot be invalidated");
  EXPECT_EQ(term_code_name(0, rdmap_etype::remote_operation, rdmap_code::stag_cannot_invalidate),
            "STag cannot be invalidated");
  EXPECT_TRUE(term_code_name(1, ddp_etype::untagged_buffer, 0x00).empty());
  EXPECT_EQ(term_code_name(1, ddp_etype::untagged_buffer, ddp_untagged_code::message_too_long),
            "DDP message too long for available buffer");
}

}  // namespace
}  // namespace ddpscope
